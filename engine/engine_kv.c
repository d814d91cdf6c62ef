/* The engine's commands for snapshots of its memory on disk
 * (memory/kv_snapshot.h): SAVE_KV and LOAD_KV, and the report of the first
 * turn after a restore (how much of it the conversation kept). Each posts
 * one KV event; nothing here fails a turn. */
#include "engine_internal.h"
#include "memory/kv_snapshot.h"
#include "memory/memory_seq.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void post_kv(engine *e, enum engine_kv_kind kind, int32_t done, int32_t total, uint64_t bytes,
                    const char *msg)
{
    engine_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = ENGINE_EV_KV;
    ev.kv = kind;
    ev.done = done;
    ev.total = total;
    ev.bytes = bytes;
    ev.n_past = e->mem.n_past;
    ev.n_ctx = e->n_ctx;
    ev.n_ckpt = memory_n_ckpt(&e->mem);
    ev.ckpt_bytes = memory_ckpt_bytes(&e->mem);
    snprintf(ev.message, sizeof ev.message, "%s", msg);
    engine_post(e, &ev);
}

/* The stamp, made once per model and forward context. */
static const kv_stamp *stamp(engine *e)
{
    if (!e->kv_stamp && (e->kv_stamp = malloc(sizeof *e->kv_stamp)))
        kv_stamp_make(e->kv_stamp, e->m, e->f, &e->mem);
    return e->kv_stamp;
}

void engine_kv_forget(engine *e)
{
    free(e->kv_stamp);
    e->kv_stamp = NULL;
    e->kv_restored = 0;
}

void engine_kv_save(engine *e, const char *path)
{
    char err[ENGINE_MSG_MAX - 32] = "", msg[ENGINE_MSG_MAX];
    uint64_t bytes = 0;
    if (!e->m || e->mem.n_past == 0) { /* nothing to keep: not a failure (an autosave after a failed turn) */
        snprintf(msg, sizeof msg, "no KV snapshot: %s",
                 !e->m ? "no model loaded" : "the cache holds nothing yet");
        post_kv(e, ENGINE_KV_SAVE_SKIPPED, 0, 0, 0, msg);
        return;
    }
    const kv_stamp *st = stamp(e);
    if (!path || !*path)
        snprintf(err, sizeof err, "no path given");
    else if (!st)
        snprintf(err, sizeof err, "out of memory");
    if (!err[0] && kv_snapshot_save(&e->mem, st, path, e->p.kv_max_bytes, &bytes, err, sizeof err) == 0) {
        snprintf(msg, sizeof msg, "KV snapshot saved: %d tokens, %.1f MiB", (int)e->mem.n_past,
                 (double)bytes / 1048576.0);
        post_kv(e, ENGINE_KV_SAVED, e->mem.n_past, e->mem.n_past, bytes, msg);
        return;
    }
    snprintf(msg, sizeof msg, "KV snapshot not saved: %s", err);
    post_kv(e, ENGINE_KV_SAVE_FAILED, 0, 0, 0, msg);
}

void engine_kv_load(engine *e, const char *path)
{
    char why[ENGINE_MSG_MAX - 64] = "", msg[ENGINE_MSG_MAX];
    e->kv_restored = 0;
    const kv_stamp *st = e->m ? stamp(e) : NULL;
    int rc = 1;
    int32_t n = 0;
    const double t0 = now_s();
    if (!path || !*path)
        snprintf(why, sizeof why, "no path given");
    else if (!e->m)
        snprintf(why, sizeof why, "no model loaded");
    else if (!st)
        snprintf(why, sizeof why, "out of memory");
    else
        rc = kv_snapshot_load(&e->mem, st, path, &n, why, sizeof why);
    if (rc == 0) {
        e->kv_restored = n;
        snprintf(msg, sizeof msg, "KV snapshot restored: %d tokens in %.2f s, not evaluated again", (int)n,
                 now_s() - t0);
        post_kv(e, ENGINE_KV_RESTORED, n, n, 0, msg);
        return;
    }
    snprintf(msg, sizeof msg, "KV snapshot not used (the conversation is evaluated again): %s", why);
    post_kv(e, ENGINE_KV_NOT_USED, 0, 0, 0, msg);
}

void engine_kv_report(engine *e, int32_t common)
{
    const int32_t n = e->kv_restored;
    if (n <= 0)
        return;
    e->kv_restored = 0;
    char msg[ENGINE_MSG_MAX];
    if (common >= n)
        snprintf(msg, sizeof msg, "KV snapshot used: its %d tokens kept, none evaluated again", (int)n);
    else
        snprintf(msg, sizeof msg,
                 "KV snapshot used in part: the conversation's tokens differ from it at position %d of %d "
                 "(another template, an edit?), evaluated again from there",
                 (int)common, (int)n);
    post_kv(e, ENGINE_KV_USED, common < n ? common : n, n, 0, msg);
}

/* ---- the slots' sequences (serve --parallel N --kv-dir) ---- */

void engine_kv_load_seq(engine *e, struct memory_seq *ms, int32_t s, const char *path)
{
    char why[ENGINE_MSG_MAX - 64] = "", msg[ENGINE_MSG_MAX];
    const kv_stamp *st = stamp(e);
    int32_t n = 0;
    const double t0 = now_s();
    int rc = !st ? (snprintf(why, sizeof why, "out of memory"), 1)
                 : kv_snapshot_load_seq(ms, s, st, path, &n, why, sizeof why);
    if (rc == 0) {
        snprintf(msg, sizeof msg, "KV snapshot restored into slot %d: %d tokens in %.2f s", (int)s, (int)n,
                 now_s() - t0);
        post_kv(e, ENGINE_KV_RESTORED, n, n, 0, msg);
        return;
    }
    snprintf(msg, sizeof msg, "KV snapshot not used (slot %d starts empty): %s", (int)s, why);
    post_kv(e, ENGINE_KV_NOT_USED, 0, 0, 0, msg);
}

typedef struct kv_file {
    char name[4096 + 512]; /* the path */
    char base[256];        /* its name in the directory */
    off_t size;
    struct timespec mtime;
} kv_file;

static int by_age(const void *a, const void *b)
{
    const kv_file *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec)
        return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
    if (x->mtime.tv_nsec != y->mtime.tv_nsec)
        return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* PREFIX.N.kv files over max bytes together: the oldest removed, never keep
 * (the one just written). Returns how many were removed. */
static int prune(const char *prefix, const char *keep, uint64_t max)
{
    const char *slash = strrchr(prefix, '/');
    char dir[4096];
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", slash == prefix ? 1 : (int)(slash - prefix), prefix);
    const char *base = slash ? slash + 1 : prefix;
    const char *keep_name = strrchr(keep, '/') ? strrchr(keep, '/') + 1 : keep;
    const size_t bl = strlen(base);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    kv_file *v = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *nm = de->d_name;
        size_t l = strlen(nm), i = bl + 1;
        if (l < bl + 5 || strncmp(nm, base, bl) != 0 || nm[bl] != '.' || strcmp(nm + l - 3, ".kv") != 0)
            continue;
        while (i < l - 3 && nm[i] >= '0' && nm[i] <= '9')
            i++;
        if (i != l - 3 || i == bl + 1)
            continue; /* not PREFIX.digits.kv */
        char path[4096 + 512];
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s", dir, nm);
        if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) || l >= sizeof v->base)
            continue;
        if (n == cap) {
            kv_file *w = realloc(v, (cap = cap ? 2 * cap : 16) * sizeof *w);
            if (!w)
                break;
            v = w;
        }
        snprintf(v[n].name, sizeof v[n].name, "%s", path);
        snprintf(v[n].base, sizeof v[n].base, "%s", nm);
        v[n].size = sb.st_size;
        v[n].mtime = sb.st_mtim;
        total += (uint64_t)sb.st_size;
        n++;
    }
    closedir(d);
    int removed = 0;
    if (v)
        qsort(v, n, sizeof *v, by_age);
    for (size_t i = 0; i < n && total > max; i++)
        if (strcmp(v[i].base, keep_name) != 0 && unlink(v[i].name) == 0) {
            total -= (uint64_t)v[i].size;
            removed++;
        }
    free(v);
    return removed;
}

void engine_kv_save_seq(engine *e, const struct memory_seq *ms, int32_t s)
{
    const char *prefix = e->p.kv_seq_prefix;
    char path[4096 + 600], err[ENGINE_MSG_MAX - 64] = "", msg[ENGINE_MSG_MAX];
    if (!prefix || memory_seq_n_past(ms, s) == 0)
        return; /* nothing held (a failed request): the slot's last snapshot stays a valid one */
    snprintf(path, sizeof path, "%s.%d.kv", prefix, (int)s);
    const kv_stamp *st = stamp(e);
    uint64_t bytes = 0;
    if (!st)
        snprintf(err, sizeof err, "out of memory");
    else if (kv_snapshot_save_seq(ms, s, st, path, e->p.kv_max_bytes, &bytes, err, sizeof err) == 0) {
        const int gone = e->p.kv_max_bytes ? prune(prefix, path, e->p.kv_max_bytes) : 0;
        snprintf(msg, sizeof msg, "KV snapshot of slot %d saved: %d tokens, %.1f MiB%s", (int)s,
                 (int)memory_seq_n_past(ms, s), (double)bytes / 1048576.0,
                 gone ? " (older snapshots removed to stay under the cap)" : "");
        post_kv(e, gone ? ENGINE_KV_PRUNED : ENGINE_KV_SAVED, memory_seq_n_past(ms, s), gone, bytes, msg);
        return;
    }
    unlink(path); /* the slot's older conversation no longer is its own */
    snprintf(msg, sizeof msg, "KV snapshot of slot %d not saved: %s", (int)s, err);
    post_kv(e, ENGINE_KV_SAVE_FAILED, 0, 0, 0, msg);
}
