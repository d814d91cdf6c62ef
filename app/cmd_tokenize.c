/* `tokscope tokenize`: text (stdin or -p) -> token ids with the model's
 * tokenizer; --cases runs llama.cpp test-tokenizer-0 style .inp files. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tokscope tokenize -m MODEL_OR_VOCAB [options] < text\n"
            "  -m, --model FILE    GGUF model or vocab-only GGUF\n"
            "  -p, --prompt TEXT   tokenize TEXT instead of reading stdin\n"
            "  --no-bos            do not add BOS even if the vocab asks for it\n"
            "  --special           parse special tokens written in the text (<|im_start|>)\n"
            "  --ids-only          print only the ids, space-separated on one line (default)\n"
            "  --pieces            one token per line: id, type and the escaped piece\n"
            "  --cases FILE.inp    split FILE on lines __ggml_vocab_test__ and print one line\n"
            "                      per case in llama.cpp's .out format (no BOS, no specials)\n"
            "  --decode            read token ids (space/comma separated) and print their text\n"
            "  --roundtrip         with --cases: also check decode(encode(case)) == case\n"
            "                      (SPM: minus the space prefix); exit 3 on a mismatch\n");
}

static char *read_all(FILE *f, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    if (!buf)
        return NULL;
    for (;;) {
        if (n == cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                return NULL;
            }
            buf = nb;
            cap *= 2;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    if (ferror(f)) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

static int32_t *encode_alloc(const tokenizer *t, const char *s, size_t len, bool bos, bool special, int32_t *n)
{
    int32_t cap = (int32_t)(len < 1024 ? 1024 : len + 16);
    int32_t *ids = malloc(sizeof *ids * (size_t)cap);
    if (!ids)
        return NULL;
    int32_t k = tokenizer_encode(t, s, len, bos, special, ids, cap);
    if (k > cap) {
        int32_t *ni = realloc(ids, sizeof *ids * (size_t)k);
        if (!ni) {
            free(ids);
            return NULL;
        }
        ids = ni;
        k = tokenizer_encode(t, s, len, bos, special, ids, k);
    }
    if (k < 0) {
        free(ids);
        return NULL;
    }
    *n = k;
    return ids;
}

/* Printable form of a piece: escapes control bytes and backslash. */
static void print_escaped(FILE *f, const char *p, int32_t n)
{
    for (int32_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        switch (c) {
        case '\n': fputs("\\n", f); break;
        case '\t': fputs("\\t", f); break;
        case '\r': fputs("\\r", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\'': fputs("\\'", f); break;
        default:
            if (c < 0x20 || c == 0x7F)
                fprintf(f, "\\x%02x", c);
            else
                fputc(c, f);
        }
    }
}

static const char *type_name(enum tokenizer_token_type ty)
{
    switch (ty) {
    case TOKEN_TYPE_NORMAL: return "normal";
    case TOKEN_TYPE_UNKNOWN: return "unknown";
    case TOKEN_TYPE_CONTROL: return "control";
    case TOKEN_TYPE_USER_DEFINED: return "user";
    case TOKEN_TYPE_UNUSED: return "unused";
    case TOKEN_TYPE_BYTE: return "byte";
    default: return "undef";
    }
}

static int run_cases(const tokenizer *t, const char *path, bool roundtrip)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "tokscope tokenize: cannot open %s: %s\n", path, strerror(errno));
        return 1;
    }
    size_t len = 0;
    char *raw = read_all(f, &len);
    fclose(f);
    if (!raw) {
        fprintf(stderr, "tokscope tokenize: cannot read %s\n", path);
        return 1;
    }
    /* same splitting as llama.cpp's test-tokenizer-0: separator "\n__ggml_vocab_test__\n",
     * a trailing piece without separator is a case too */
    static const char sep[] = "\n__ggml_vocab_test__\n";
    const size_t sl = sizeof sep - 1;
    size_t pos = 0;
    int rc = 0, ncase = 1;
    while (pos < len) {
        const char *m = memmem(raw + pos, len - pos, sep, sl);
        size_t clen = m ? (size_t)(m - (raw + pos)) : len - pos;
        int32_t n = 0;
        int32_t *ids = encode_alloc(t, raw + pos, clen, false, false, &n);
        if (!ids) {
            fprintf(stderr, "tokscope tokenize: tokenization failed\n");
            rc = 1;
            break;
        }
        for (int32_t i = 0; i < n; i++)
            printf(" %d", ids[i]);
        putchar('\n');
        if (roundtrip) {
            int32_t need = tokenizer_decode(t, ids, n, true, true, NULL, 0);
            char *dec = malloc((size_t)need + 1);
            if (!dec) {
                free(ids);
                rc = 1;
                break;
            }
            tokenizer_decode(t, ids, n, true, true, dec, need + 1);
            if ((size_t)need != clen || memcmp(dec, raw + pos, clen) != 0) {
                fprintf(stderr, "round-trip mismatch in case %d: '%.*s' decoded to '%s'\n", ncase, (int)clen,
                        raw + pos, dec);
                rc = 3;
            }
            free(dec);
        }
        ncase++;
        free(ids);
        if (!m)
            break;
        pos += clen + sl;
    }
    free(raw);
    return rc;
}

/* ids on stdin -> text on stdout (special tokens rendered) */
static int run_decode(const tokenizer *t, const char *text, size_t len)
{
    int32_t n = 0, cap = 256;
    int32_t *ids = malloc(sizeof *ids * (size_t)cap);
    size_t i = 0;
    int rc = 0;
    if (!ids)
        return 1;
    while (i < len) {
        if (text[i] == ' ' || text[i] == ',' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r' ||
            text[i] == '[' || text[i] == ']') {
            i++;
            continue;
        }
        char *end;
        errno = 0;
        long v = strtol(text + i, &end, 10);
        if (end == text + i || errno || v < 0 || v >= tokenizer_n_vocab(t)) {
            size_t w = 0;
            while (i + w < len && w < 24 && !strchr(" ,\n\t\r[]", text[i + w]))
                w++;
            fprintf(stderr, "tokscope tokenize: bad token id '%.*s' (vocab has %d tokens)\n", (int)w, text + i,
                    tokenizer_n_vocab(t));
            rc = 1;
            break;
        }
        if (n == cap) {
            int32_t *ni = realloc(ids, sizeof *ids * (size_t)cap * 2);
            if (!ni) {
                rc = 1;
                break;
            }
            ids = ni;
            cap *= 2;
        }
        ids[n++] = (int32_t)v;
        i = (size_t)(end - text);
    }
    if (!rc) {
        int32_t need = tokenizer_decode(t, ids, n, true, true, NULL, 0);
        char *out = malloc((size_t)need + 1);
        if (!out) {
            rc = 1;
        } else {
            tokenizer_decode(t, ids, n, true, true, out, need + 1);
            fwrite(out, 1, (size_t)need, stdout);
            putchar('\n');
            free(out);
        }
    }
    free(ids);
    return rc;
}

int cmd_tokenize(int argc, char **argv)
{
    const char *model = NULL, *prompt = NULL, *cases = NULL;
    bool no_bos = false, special = false, pieces = false, roundtrip = false, decode = false;
    static const int opt_ids[] = {CLI_MODEL,  CLI_PROMPT, CLI_CASES,  CLI_NO_BOS, CLI_SPECIAL,
                              CLI_IDS_ONLY, CLI_DECODE, CLI_ROUNDTRIP, CLI_PIECES, CLI_HELP};
    cli p;
    cli_value v;
    cli_begin(&p, "tokenize", opt_ids, sizeof opt_ids / sizeof opt_ids[0], false, argc, argv);
    int id;
    while ((id = cli_next(&p, &v)) != CLI_END) {
        switch (id) {
        case CLI_ERROR: return 2;
        case CLI_MODEL: model = v.text; break;
        case CLI_PROMPT: prompt = v.text; break;
        case CLI_CASES: cases = v.text; break;
        case CLI_NO_BOS: no_bos = true; break;
        case CLI_SPECIAL: special = true; break;
        case CLI_IDS_ONLY: pieces = false; break;
        case CLI_DECODE: decode = true; break;
        case CLI_ROUNDTRIP: roundtrip = true; break;
        case CLI_PIECES: pieces = true; break;
        case CLI_HELP: usage(stdout); return 0;
        }
    }
    if (cli_rest(&p) != argc)
        return cli_fail(&p, "unexpected argument '%s'", argv[cli_rest(&p)]);
    if (!model)
        return cli_fail(&p, "-m MODEL is required");
    char err[512];
    gguf_ctx *g = gguf_open(model, err, sizeof err);
    if (!g) {
        fprintf(stderr, "tokscope tokenize: %s\n", err);
        return 1;
    }
    tokenizer *t = tokenizer_build(g, err, sizeof err);
    gguf_close(g);
    if (!t) {
        fprintf(stderr, "tokscope tokenize: %s\n", err);
        return 1;
    }
    int rc = 0;
    if (cases) {
        rc = run_cases(t, cases, roundtrip);
        tokenizer_free(t);
        return rc;
    }
    size_t len = 0;
    char *text;
    if (prompt) {
        len = strlen(prompt);
        text = strdup(prompt);
    } else {
        text = read_all(stdin, &len);
    }
    if (!text) {
        fprintf(stderr, "tokscope tokenize: cannot read the input text\n");
        tokenizer_free(t);
        return 1;
    }
    if (decode) {
        rc = run_decode(t, text, len);
        free(text);
        tokenizer_free(t);
        return rc;
    }
    int32_t n = 0;
    int32_t *ids = encode_alloc(t, text, len, tokenizer_add_bos(t) && !no_bos, special, &n);
    if (!ids) {
        fprintf(stderr, "tokscope tokenize: tokenization failed\n");
        rc = 1;
    } else if (pieces) {
        char buf[256];
        for (int32_t i = 0; i < n; i++) {
            int32_t l = tokenizer_token_to_piece(t, ids[i], true, buf, sizeof buf);
            if (l > (int32_t)sizeof buf)
                l = sizeof buf;
            printf("%6d %-8s '", ids[i], type_name(tokenizer_token_type(t, ids[i])));
            print_escaped(stdout, buf, l);
            printf("'\n");
        }
    } else {
        for (int32_t i = 0; i < n; i++)
            printf(i ? " %d" : "%d", ids[i]);
        putchar('\n');
    }
    free(ids);
    free(text);
    tokenizer_free(t);
    return rc;
}
