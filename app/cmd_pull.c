/* `tokscope pull REPO[:QUANT] | URL [-o DIR]`: a model from a Hugging Face
 * hub into the models directory the picker reads (see pull.h for how a spec
 * picks its files and how a download is checked and resumed).
 *
 * Exit status: 0 pulled (or already there), 1 failed (the message says why
 * and whether the partial download was kept for a resume), 2 usage. */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "pull.h"

#define PULL_MAX_FILES 64

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tokscope pull REPO[:QUANT] [-o DIR]\n"
            "       tokscope pull REPO:FILE.gguf [-o DIR]\n"
            "       tokscope pull URL [-o DIR]\n\n"
            "Downloads a GGUF model from a Hugging Face hub (the syntax of llama-cli -hf):\n"
            "unsloth/Qwen3.5-4B-GGUF:Q4_K_M picks the .gguf whose name carries Q4_K_M (every\n"
            "part of a split model); without :QUANT, Q4_K_M or the repository's only model.\n"
            "Files go to DIR (default ~/models, which the TUI's model picker lists) under\n"
            "their own names. A download is written to NAME.part and renamed only once its\n"
            "sha256 matches the one the hub publishes; an interrupted download resumes where\n"
            "it stopped when the same command runs again.\n\n"
            "  -o, --output DIR  where the files go (created if missing)\n"
            "  -n, --dry-run     say which files would be pulled, download nothing\n"
            "  -h, --help        this text\n\n"
            "Environment: HF_TOKEN (gated or private repositories), HF_ENDPOINT (another hub,\n"
            "default https://huggingface.co), TOKSCOPE_PULL_STALL (seconds without a byte\n"
            "before giving up, default 60).\n\n"
            "Exit status: 0 pulled or already there, 1 failed (the message says why), 2 usage.\n");
}

static int mkdirs(const char *dir)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s", dir) >= (int)sizeof tmp)
        return -1;
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* endpoint/repo/resolve/main/path with each path segment escaped */
static char *resolve_url(const char *endpoint, const char *repo, const char *path)
{
    size_t cap = strlen(endpoint) + strlen(repo) + 3 * strlen(path) + 32;
    char *u = malloc(cap);
    if (!u)
        return NULL;
    int off = snprintf(u, cap, "%s/%s/resolve/main/", endpoint, repo);
    const char *s = path;
    while (*s) {
        const char *e = strchr(s, '/');
        size_t l = e ? (size_t)(e - s) : strlen(s);
        char *esc = curl_easy_escape(NULL, s, (int)l);
        off += snprintf(u + off, cap - (size_t)off, "%s%s", esc ? esc : "", e ? "/" : "");
        curl_free(esc);
        s += l + (e ? 1 : 0);
    }
    return u;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

int cmd_pull(int argc, char **argv)
{
    static const int opt_ids[] = {CLI_OUTPUT_DIR, CLI_DRY_RUN, CLI_HELP};
    const char *out_dir = NULL;
    bool dry = false;
    cli p;
    cli_value v;
    cli_begin(&p, "pull", opt_ids, sizeof opt_ids / sizeof opt_ids[0], false, argc, argv);
    int c;
    while ((c = cli_next(&p, &v)) != CLI_END) {
        switch (c) {
        case CLI_ERROR: return 2;
        case CLI_OUTPUT_DIR: out_dir = v.text; break;
        case CLI_DRY_RUN: dry = true; break;
        case CLI_HELP: usage(stdout); return 0;
        }
    }
    const int rest = cli_rest(&p);
    if (rest != argc - 1)
        return cli_fail(&p, "%s", rest >= argc ? "no model given" : "one model at a time");
    char err[2048];
    pull_spec spec;
    if (pull_spec_parse(argv[rest], &spec, err, sizeof err) != 0) {
        fprintf(stderr, "tokscope pull: %s\n", err);
        return 2;
    }
    char dir[4096];
    const char *home = getenv("HOME");
    if (out_dir)
        snprintf(dir, sizeof dir, "%s", out_dir);
    else if (home && *home)
        snprintf(dir, sizeof dir, "%s/models", home);
    else {
        fprintf(stderr, "tokscope pull: HOME is not set: give a directory with -o DIR\n");
        return 2;
    }
    char endpoint[1024];
    const char *ep = getenv("HF_ENDPOINT");
    snprintf(endpoint, sizeof endpoint, "%s", ep && *ep ? ep : "https://huggingface.co");
    for (size_t l = strlen(endpoint); l > 0 && endpoint[l - 1] == '/'; l--)
        endpoint[l - 1] = 0;
    const char *stall = getenv("TOKSCOPE_PULL_STALL");
    pull_net net = {
        .endpoint = endpoint,
        .token = getenv("HF_TOKEN"),
        .stall_seconds = stall && atol(stall) > 0 ? atol(stall) : 60,
        .progress = isatty(2),
    };

    pull_file files[PULL_MAX_FILES];
    int n;
    if (spec.is_url) {
        memset(&files[0], 0, sizeof files[0]);
        char name[512];
        const char *p = spec.url + strcspn(spec.url, "?#");
        const char *b = p;
        while (b > spec.url && b[-1] != '/')
            b--;
        snprintf(name, sizeof name, "%.*s", (int)(p - b), b);
        if (!*name) {
            fprintf(stderr, "tokscope pull: %s names no file\n", spec.url);
            return 2;
        }
        char *un = curl_easy_unescape(NULL, name, 0, NULL);
        snprintf(files[0].path, sizeof files[0].path, "%s", un ? un : name);
        curl_free(un);
        if (strchr(files[0].path, '/') || !strcmp(files[0].path, "..") || !strcmp(files[0].path, ".")) {
            fprintf(stderr, "tokscope pull: %s: bad file name\n", spec.url);
            return 2;
        }
        n = 1;
    } else {
        char url[2048];
        snprintf(url, sizeof url, "%s/api/models/%s/tree/main?recursive=true", endpoint, spec.repo);
        char *tree = NULL;
        if (pull_fetch_text(&net, url, &tree, err, sizeof err) != 0) {
            fprintf(stderr, "tokscope pull: %s\n", err);
            return 1;
        }
        n = pull_pick(tree, spec.quant, files, PULL_MAX_FILES, err, sizeof err);
        free(tree);
        if (n < 0) {
            fprintf(stderr, "tokscope pull: %s: %s\n", spec.repo, err);
            return 1;
        }
    }
    for (int i = 0; i < n; i++)
        if (!strcmp(base_name(files[i].path), "..") || !*base_name(files[i].path)) {
            fprintf(stderr, "tokscope pull: the hub listed a bad file name '%s'\n", files[i].path);
            return 1;
        }
    if (dry) {
        for (int i = 0; i < n; i++)
            printf("%s  %llu bytes  sha256 %s  -> %s/%s\n", files[i].path, (unsigned long long)files[i].size,
                   files[i].sha256[0] ? files[i].sha256 : "(not listed)", dir, base_name(files[i].path));
        return 0;
    }
    if (mkdirs(dir) != 0) {
        fprintf(stderr, "tokscope pull: cannot create %s: %s\n", dir, strerror(errno));
        return 1;
    }
    for (int i = 0; i < n; i++) {
        char dest[4096];
        if (snprintf(dest, sizeof dest, "%s/%s", dir, base_name(files[i].path)) >= (int)sizeof dest) {
            fprintf(stderr, "tokscope pull: path too long: %s/%s\n", dir, base_name(files[i].path));
            return 1;
        }
        struct stat st;
        if (stat(dest, &st) == 0 && files[i].size && (uint64_t)st.st_size == files[i].size) {
            fprintf(stderr, "%s: already there (%llu bytes)\n", dest, (unsigned long long)files[i].size);
            continue;
        }
        char *url = spec.is_url ? strdup(spec.url) : resolve_url(endpoint, spec.repo, files[i].path);
        if (!url) {
            fprintf(stderr, "tokscope pull: out of memory\n");
            return 1;
        }
        int rc = pull_fetch_file(&net, url, dest, files[i].size, files[i].sha256, err, sizeof err);
        free(url);
        if (rc != 0) {
            fprintf(stderr, "tokscope pull: %s\n", err);
            return 1;
        }
    }
    int part, count;
    size_t pre;
    if (n > 1 && pull_split_part(base_name(files[0].path), &part, &count, &pre))
        fprintf(stderr, "%s/%s: a split model of %d parts; tokscope opens single files only: join them with "
                "llama-gguf-split --merge %s/%s OUT.gguf\n", dir, base_name(files[0].path), count, dir,
                base_name(files[0].path));
    return 0;
}
