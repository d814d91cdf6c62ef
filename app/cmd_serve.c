/* tokscope serve: the exact engine behind the OpenAI API (serve.h has the
 * map of the pieces). Loopback by default; any other address only with an
 * API key. Runs until SIGINT or SIGTERM. */
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "config.h"
#include "serve.h"
#include "spec/spec.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tokscope serve -m MODEL [--host 127.0.0.1] [--port 8080] [--api-key-file F] [options]\n"
            "\n"
            "The engine behind an OpenAI-compatible API: POST /v1/chat/completions and /v1/completions\n"
            "(streaming or not, logprobs), GET /v1/models, GET /health. One engine; requests in arrival order.\n"
            "\n"
            "  -m, --model FILE         GGUF model\n"
            "  --host ADDR              numeric address to listen on (default 127.0.0.1); an address that\n"
            "                           is not loopback needs --api-key-file\n"
            "  --port N                 TCP port (default 8080; 0 = any free port, printed at start)\n"
            "  --api-key-file F         every endpoint but /health wants 'Authorization: Bearer KEY', KEY\n"
            "                           being the file's first line\n"
            "  --max-queue N            requests that may wait for the engine (default 64); past it: 503\n"
            "  --parallel N             N requests at once, one batch per step (continuous batching; default 4,\n"
            "                           1 = one at a time); each slot has a context of -c tokens, its KV\n"
            "                           cache taking memory once used; --spec runs 1 (refused with N > 1)\n"
            "  -c, --ctx-size N         context size (default min(training context, 4096))\n"
            "  -t, --threads N          threads (default: online CPUs)\n"
            "  --spec KIND              speculative decoding: off (default), ngram, draft, mtp, auto; the same replies\n"
            "  --draft-max N            drafts per verification (default 3)\n"
            "  -md, --draft-model FILE  the draft model of --spec draft (same vocabulary)\n"
            "  --blas MODE              OpenBLAS for large prompt batches: auto (default; where it was\n"
            "                           measured faster, as generate's), on, off (the reference's bits:\n"
            "                           llama-server's replies, with its logprobs, on any CPU)\n"
            "  --kv-dir DIR             keep the cached conversation's KV cache (and recurrent state) in\n"
            "                           DIR/MODEL.kv after every request (N > 1 slots: DIR/MODEL.S.kv, one\n"
            "                           per slot), and restore it at start when it matches the model and\n"
            "                           settings: a restarted server answers a request that extends it\n"
            "                           without evaluating it again\n"
            "  --kv-max-mb N            the largest snapshot written, and with N > 1 slots the most their\n"
            "                           files take together, the oldest removed first (MiB; default 1024,\n"
            "                           0 = no cap)\n"
            "  --config FILE            read FILE after the system and user tokscope.ini; their [serve]\n"
            "                           section sets these options (the command line wins; a bad [serve]\n"
            "                           value stops serve)\n"
            "  --print-config           print the merged configuration and exit\n"
            "\n"
            "Prints 'listening on http://ADDR:PORT' on stderr once the model is loaded.\n");
}

/* 127.0.0.0/8, ::1 and ::ffff:127.x; false for anything else (0.0.0.0 included). */
static bool is_loopback(const char *host, bool *numeric)
{
    struct in_addr a4;
    struct in6_addr a6;
    *numeric = true;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, host, &a6) == 1) {
        if (IN6_IS_ADDR_LOOPBACK(&a6))
            return true;
        return IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127;
    }
    *numeric = false;
    return false;
}

/* The key: the file's first line, blanks at its ends trimmed. */
static char *read_key(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot read the API key file %s", path);
        return NULL;
    }
    char line[1024];
    char *key = NULL;
    if (fgets(line, sizeof line, f)) {
        char *s = line, *e = line + strlen(line);
        while (*s == ' ' || *s == '\t')
            s++;
        while (e > s && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
            *--e = 0;
        if (*s)
            key = strdup(s);
    }
    fclose(f);
    if (!key)
        snprintf(err, errlen, "the API key file %s holds no key on its first line", path);
    return key;
}

/* Waits for the engine's LOADED (true, info filled) or a load error. */
static bool wait_loaded(engine *e, engine_model_info *info, char *err, size_t errlen)
{
    engine_event *ev = malloc(sizeof *ev);
    if (!ev) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    bool ok = false;
    for (;;) {
        struct pollfd pf = {.fd = engine_event_fd(e), .events = POLLIN};
        if (poll(&pf, 1, -1) < 0)
            continue;
        bool end = false;
        while (!end && engine_poll(e, ev)) {
            if (ev->type == ENGINE_EV_LOADED) {
                *info = ev->info;
                ok = end = true;
            } else if (ev->type == ENGINE_EV_ERROR) {
                snprintf(err, errlen, "%s", ev->message);
                end = true;
            }
        }
        if (end)
            break;
    }
    free(ev);
    return ok;
}

/* Waits for the engine's KV event (the snapshot's restore) and says what it was. */
static void wait_kv(engine *e)
{
    engine_event *ev = malloc(sizeof *ev);
    for (bool end = !ev; !end;) {
        struct pollfd pf = {.fd = engine_event_fd(e), .events = POLLIN};
        if (poll(&pf, 1, -1) < 0)
            continue;
        while (!end && engine_poll(e, ev))
            if (ev->type == ENGINE_EV_KV || ev->type == ENGINE_EV_ERROR) {
                fprintf(stderr, "tokscope serve: %s\n", ev->message);
                end = true;
            }
    }
    free(ev);
}

/* DIR/MODEL.kv (MODEL: the file's name without .gguf); DIR made when missing. */
static bool kv_path_of(const char *dir, const char *model_path, char *out, size_t cap, char *err, size_t errlen)
{
    struct stat st;
    if (stat(dir, &st) != 0 && (errno != ENOENT || mkdir(dir, 0700) != 0)) {
        snprintf(err, errlen, "--kv-dir %s: %s", dir, strerror(errno));
        return false;
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "--kv-dir %s: not a directory", dir);
        return false;
    }
    const char *slash = strrchr(model_path, '/');
    const char *name = slash ? slash + 1 : model_path;
    size_t nl = strlen(name);
    if (nl > 5 && !strcmp(name + nl - 5, ".gguf"))
        nl -= 5;
    if ((size_t)snprintf(out, cap, "%s/%.*s.kv", dir, (int)nl, name) >= cap) {
        snprintf(err, errlen, "--kv-dir %s: the path is too long", dir);
        return false;
    }
    return true;
}

/* The options that are [serve] keys: the command line sets them over the files. */
static const struct {
    int id;
    const char *label, *key;
} serve_keys[] = {
    {CLI_MODEL, "-m", "model"},           {CLI_HOST, "--host", "host"},
    {CLI_PORT, "--port", "port"},         {CLI_API_KEY_FILE, "--api-key-file", "api_key_file"},
    {CLI_MAX_QUEUE, "--max-queue", "max_queue"}, {CLI_PARALLEL, "--parallel", "parallel"},
    {CLI_CTX, "-c", "n_ctx"},             {CLI_THREADS, "-t", "threads"},
    {CLI_KV_DIR, "--kv-dir", "kv_dir"},   {CLI_KV_MAX_MB, "--kv-max-mb", "kv_max_mb"},
};
#define N_SERVE_KEYS (sizeof serve_keys / sizeof serve_keys[0])

/* p into buf, "~/x" as $HOME/x; NULL for "". */
static const char *home_path(const char *p, char *buf, size_t cap)
{
    const char *home = getenv("HOME");
    if (!*p)
        return NULL;
    if (p[0] != '~' || p[1] != '/' || !home || !*home || (size_t)snprintf(buf, cap, "%s%s", home, p + 1) >= cap)
        snprintf(buf, cap, "%s", p);
    return buf;
}

/* The layers of tokscope.ini (config.h) read for [serve], whose unknown keys
 * and bad values stop serve (a server should not start on a setting it
 * ignored); the other sections' problems are only reported. false: said. */
static bool serve_config(tok_config *cfg, const char *config_path)
{
    char path_buf[4096], err[512] = "";
    char *diag_text = NULL;
    size_t diag_len = 0;
    FILE *diag = open_memstream(&diag_text, &diag_len);
    cfg->strict = "serve";
    bool ok = config_load(cfg, config_system_path(), false, diag, err, sizeof err) &&
              config_load(cfg, config_default_path(path_buf, sizeof path_buf), false, diag, err, sizeof err) &&
              (!config_path || config_load(cfg, config_path, true, diag, err, sizeof err));
    if (diag)
        fclose(diag);
    if (!ok)
        fprintf(stderr, "tokscope serve: config: %s\n", err);
    else if (cfg->strict_err[0]) {
        fprintf(stderr, "tokscope serve: config: %s\n", cfg->strict_err);
        ok = false;
    } else if (diag_text)
        fwrite(diag_text, 1, diag_len, stderr);
    free(diag_text);
    return ok;
}

int cmd_serve(int argc, char **argv)
{
    enum spec_type spec = SPEC_OFF;
    enum blas_mode blas = BLAS_MODE_AUTO;
    long draft_max = 0;
    const char *draft_model = NULL, *config_path = NULL;
    bool print_config = false;
    static const int opt_ids[] = {CLI_MODEL,   CLI_HOST,    CLI_PORT,      CLI_API_KEY_FILE, CLI_MAX_QUEUE,
                                  CLI_PARALLEL, CLI_CTX,    CLI_THREADS,   CLI_SPEC,         CLI_DRAFT_MAX,
                                  CLI_DRAFT_MODEL, CLI_KV_DIR, CLI_KV_MAX_MB, CLI_BLAS,   CLI_CONFIG,
                                  CLI_PRINT_CONFIG, CLI_HELP};
    const size_t n_opts = sizeof opt_ids / sizeof opt_ids[0];
    cli p;
    cli_value cv;
    int o;
    /* pass 1: --help and the files; mistakes are reported in pass 2 */
    cli_begin(&p, "serve", opt_ids, n_opts, false, argc, argv);
    p.quiet = true;
    while ((o = cli_next(&p, &cv)) != CLI_END) {
        if (o == CLI_HELP) {
            usage(stdout);
            return 0;
        }
        if (o == CLI_CONFIG)
            config_path = cv.text;
        if (o == CLI_PRINT_CONFIG)
            print_config = true;
    }
    tok_config cfg;
    config_init(&cfg);
    if (!serve_config(&cfg, config_path)) {
        config_free(&cfg);
        return 2;
    }
    /* pass 2: the command line over the files */
    char err[512];
    cli_begin(&p, "serve", opt_ids, n_opts, false, argc, argv);
    while ((o = cli_next(&p, &cv)) != CLI_END) {
        if (o == CLI_ERROR) {
            config_free(&cfg);
            return 2;
        }
        for (size_t i = 0; i < N_SERVE_KEYS; i++)
            if (serve_keys[i].id == o &&
                !config_set(&cfg, "serve", serve_keys[i].key, cv.text, serve_keys[i].label, err, sizeof err)) {
                config_free(&cfg);
                return cli_fail(&p, "invalid value '%s' for %s: %s", cv.text, p.typed, err);
            }
        switch (o) {
        case CLI_SPEC: spec_type_parse(cv.text, &spec); break;
        case CLI_DRAFT_MAX: draft_max = cv.i; break;
        case CLI_DRAFT_MODEL: draft_model = cv.text; break;
        case CLI_BLAS: blas_mode_parse(cv.text, &blas); break;
        default: break;
        }
    }
    if (cli_rest(&p) != argc) {
        config_free(&cfg);
        return cli_fail(&p, "unexpected argument '%s'", argv[cli_rest(&p)]);
    }
    if (print_config) {
        config_print(&cfg, stdout);
        config_free(&cfg);
        return 0;
    }
    const config_serve *sc = &cfg.serve;
    const config_origin *par_from = config_origin_of(&cfg, "serve", "parallel");
    const bool parallel_given = par_from && par_from->src; /* the command line's or a file's */
    long parallel = sc->parallel;
    const long port = sc->port, max_queue = sc->max_queue, n_ctx = sc->n_ctx, threads = sc->threads,
               kv_max_mb = sc->kv_max_mb;
    char model_buf[4096], key_buf[4096], dir_buf[4096], host[256];
    const char *model_path = home_path(sc->model, model_buf, sizeof model_buf);
    const char *key_file = home_path(sc->api_key_file, key_buf, sizeof key_buf);
    const char *kv_dir = home_path(sc->kv_dir, dir_buf, sizeof dir_buf);
    snprintf(host, sizeof host, "%s", sc->host);
    config_free(&cfg);
    if (!model_path)
        return cli_fail(&p, "-m MODEL is required (or [serve] model in tokscope.ini)");
    if (spec != SPEC_OFF && parallel > 1) {
        if (parallel_given) {
            fprintf(stderr, "tokscope serve: --spec runs one request at a time: give --parallel 1 with it\n");
            return 2;
        }
        fprintf(stderr, "tokscope serve: --spec runs one request at a time: 1 slot (not the default %ld)\n",
                parallel);
        parallel = 1;
    }
    bool numeric;
    const bool loopback = is_loopback(host, &numeric);
    if (!numeric) {
        fprintf(stderr, "tokscope serve: --host wants a numeric IPv4 or IPv6 address, not '%s'\n", host);
        return 2;
    }
    if (!loopback && !key_file) {
        fprintf(stderr,
                "tokscope serve: refusing to listen on %s without an API key: anyone who reaches it could use "
                "the model (give --api-key-file F, or listen on 127.0.0.1)\n",
                host);
        return 2;
    }
    char *key = NULL;
    if (key_file && !(key = read_key(key_file, err, sizeof err))) {
        fprintf(stderr, "tokscope serve: %s\n", err);
        return 2;
    }
    char kv_path[4096];
    if (kv_dir && !kv_path_of(kv_dir, model_path, kv_path, sizeof kv_path, err, sizeof err)) {
        fprintf(stderr, "tokscope serve: %s\n", err);
        free(key);
        return 2;
    }

    /* SIGINT/SIGTERM end the server: blocked in every thread, taken by sigwait */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* room for many idle connections (each one a descriptor): serve_http
     * sizes its connection limit from this */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max && rl.rlim_cur < 65536) {
        rl.rlim_cur = rl.rlim_max < 65536 ? rl.rlim_max : 65536;
        setrlimit(RLIMIT_NOFILE, &rl);
    }

    int rc = 1;
    serve_vocab *v = NULL;
    engine *e = NULL;
    serve_bridge *b = NULL;
    serve_http *h = NULL;
    engine_model_info info;
    if (!(v = serve_vocab_open(model_path, err, sizeof err))) {
        fprintf(stderr, "tokscope serve: %s: %s\n", model_path, err);
        goto out;
    }
    engine_params ep = engine_default_params();
    ep.model_path = model_path;
    ep.n_ctx = (uint32_t)n_ctx;
    ep.n_threads = (int32_t)threads;
    ep.context_shift = false; /* a full context ends the reply ("length"), as llama-server does */
    ep.spec_type = (int32_t)spec;
    ep.draft_max = (int32_t)draft_max;
    ep.draft_model = draft_model;
    ep.n_parallel = (int32_t)parallel;
    ep.blas = blas;
    ep.kv_max_bytes = (uint64_t)kv_max_mb << 20;
    /* several slots: DIR/MODEL.S.kv per sequence (kv_path less its ".kv") */
    char kv_prefix[4096];
    snprintf(kv_prefix, sizeof kv_prefix, "%.*s", kv_dir ? (int)strlen(kv_path) - 3 : 0, kv_dir ? kv_path : "");
    ep.kv_seq_prefix = kv_dir && parallel > 1 ? kv_prefix : NULL;
    if (!(e = engine_start(&ep, err, sizeof err)) || !wait_loaded(e, &info, err, sizeof err)) {
        fprintf(stderr, "tokscope serve: %s\n", err);
        goto out;
    }
    /* the conversation a former run held: restored when its stamp matches, else
     * (another model or settings, truncated, altered) said and evaluated as new */
    if (kv_dir && parallel == 1 && access(kv_path, F_OK) == 0) {
        engine_load_kv(e, kv_path);
        wait_kv(e);
    }
    /* each slot's own, into its sequence: a request takes the one holding
     * the longest prefix of its prompt, whichever it is */
    for (long s = 0; kv_dir && parallel > 1 && s < parallel; s++) {
        char p[4096 + 32];
        snprintf(p, sizeof p, "%s.%ld.kv", kv_prefix, s);
        if (access(p, F_OK) == 0) {
            engine_load_kv_seq(e, p, (int32_t)s);
            wait_kv(e);
        }
    }
    const char *bridge_kv = kv_dir && parallel == 1 ? kv_path : NULL;
    if (!(b = serve_bridge_start(e, v, (int32_t)max_queue, (int32_t)parallel, bridge_kv, err,
                                 sizeof err))) {
        fprintf(stderr, "tokscope serve: %s\n", err);
        goto out;
    }
    e = NULL; /* the bridge's now */
    const char *slash = strrchr(model_path, '/');
    serve_http_params hp = {.host = host,
                            .port = (uint16_t)port,
                            .api_key = key,
                            .model_id = slash ? slash + 1 : model_path,
                            .info = info,
                            .bridge = b,
                            .vocab = v};
    if (!(h = serve_http_start(&hp, err, sizeof err))) {
        fprintf(stderr, "tokscope serve: %s\n", err);
        goto out;
    }
    const bool v6 = strchr(host, ':') != NULL;
    fprintf(stderr, "tokscope serve: %s (%s, context %u) listening on http://%s%s%s:%u (queue %ld, %ld slot%s, %s)\n",
            hp.model_id, info.arch, info.n_ctx, v6 ? "[" : "", host, v6 ? "]" : "", serve_http_port(h), max_queue,
            parallel, parallel == 1 ? "" : "s", key ? "API key required" : "no API key");
    fflush(stderr);
    int sig = 0;
    sigwait(&sigs, &sig);
    fprintf(stderr, "tokscope serve: %s, stopping\n", sig == SIGINT ? "interrupted" : "terminated");
    rc = 0;
out:
    /* the bridge first: every job ends, so connection threads return */
    serve_bridge_stop(b);
    serve_http_stop(h);
    serve_bridge_free(b);
    if (e)
        engine_shutdown(e);
    serve_vocab_close(v);
    free(key);
    return rc;
}
