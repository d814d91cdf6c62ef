/* Session files, the background writer, the offer to resume. */
#include "autosave.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atomic.h"
#include "memory/kv_snapshot.h"
#include "draw.h"
#include "theme.h"
#include "think.h"
#include "ui.h"

#define AUTOSAVE_PATH_MAX (4096 + 128)

typedef struct autosave {
    bool enabled;                 /* false: --no-autosave or no state directory */
    char dir[4096 + 16];          /* STATE/sessions ("" without a state directory) */
    char own[AUTOSAVE_PATH_MAX];  /* this session's file; "" until it is named */
    char last[AUTOSAVE_PATH_MAX]; /* the newest other session ("" when none) */
    store_summary last_sum;
    time_t last_mtime;
    bool offer;   /* the empty conversation offers to resume `last` */
    bool failing; /* the last save failed (the next success says so) */

    /* the writer thread: one snapshot waiting at most (a newer one replaces it) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thr;
    bool thr_started, busy, quit;
    char *job;
    char job_path[AUTOSAVE_PATH_MAX];
    unsigned long result_seq, shown_seq;
    bool result_ok;
    int result_errno;
    char result_err[640];

    /* said once the model has loaded: its "loaded" message would hide it */
    char note[1024];
    enum ui_msg_level note_level;
} autosave;

const char *autosave_state_dir(char *buf, size_t cap)
{
    const char *xdg = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    if (xdg && *xdg)
        snprintf(buf, cap, "%s/tokscope", xdg);
    else if (home && *home)
        snprintf(buf, cap, "%s/.local/state/tokscope", home);
    else if (cap)
        buf[0] = 0;
    return buf;
}

/* ---- the sessions directory ---- */

typedef struct session_file {
    char *path;
    struct timespec mtime;
} session_file;

static int cmp_newest_first(const void *a, const void *b)
{
    const session_file *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec)
        return x->mtime.tv_sec < y->mtime.tv_sec ? 1 : -1;
    if (x->mtime.tv_nsec != y->mtime.tv_nsec)
        return x->mtime.tv_nsec < y->mtime.tv_nsec ? 1 : -1;
    return strcmp(y->path, x->path); /* names start with the date */
}

/* The session files of dir, newest first; returns the count (*out malloc'd). */
static size_t list_sessions(const char *dir, session_file **out)
{
    *out = NULL;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (de->d_name[0] == '.' || l < 6 || strcmp(de->d_name + l - 5, ".json") != 0)
            continue;
        char path[AUTOSAVE_PATH_MAX];
        struct stat sb;
        if (snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >= (int)sizeof path ||
            stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            session_file *v = realloc(*out, cap * sizeof *v);
            if (!v)
                break;
            *out = v;
        }
        char *p = strdup(path);
        if (!p)
            break;
        (*out)[n++] = (session_file){p, sb.st_mtim};
    }
    closedir(d);
    if (n)
        qsort(*out, n, sizeof **out, cmp_newest_first);
    return n;
}

static void free_sessions(session_file *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i].path);
    free(v);
}

bool autosave_find_last(const char *sessions_dir, const char *exclude, char *path, size_t cap)
{
    session_file *v;
    size_t n = list_sessions(sessions_dir, &v);
    bool found = false;
    for (size_t i = 0; i < n && !found; i++)
        if (!exclude || strcmp(v[i].path, exclude) != 0) {
            snprintf(path, cap, "%s", v[i].path);
            found = true;
        }
    free_sessions(v, n);
    return found;
}

/* NAME.json's KV snapshot, NAME.kv (memory/kv_snapshot.h). */
static void unlink_kv(const char *session)
{
    char kv[AUTOSAVE_PATH_MAX + 8];
    if (kv_snapshot_path(session, kv, sizeof kv))
        unlink(kv);
}

/* KV snapshots whose session file is gone (deleted by hand, or a crash
 * between the two). */
static void remove_orphan_kv(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        size_t l = strlen(de->d_name);
        char kv[AUTOSAVE_PATH_MAX], js[AUTOSAVE_PATH_MAX + 8];
        if (de->d_name[0] == '.' || l < 4 || strcmp(de->d_name + l - 3, ".kv") != 0 ||
            snprintf(kv, sizeof kv, "%s/%s", dir, de->d_name) >= (int)sizeof kv)
            continue;
        snprintf(js, sizeof js, "%.*s.json", (int)(strlen(kv) - 3), kv);
        if (access(js, F_OK) != 0 && errno == ENOENT)
            unlink(kv);
    }
    if (d)
        closedir(d);
}

void autosave_prune(const char *sessions_dir, size_t keep)
{
    session_file *v;
    size_t n = list_sessions(sessions_dir, &v);
    for (size_t i = keep; i < n; i++) {
        unlink(v[i].path);
        unlink_kv(v[i].path);
    }
    /* snapshots are large: only the newest sessions keep theirs */
    for (size_t i = AUTOSAVE_KV_KEEP; i < n && i < keep; i++)
        unlink_kv(v[i].path);
    free_sessions(v, n);
    remove_orphan_kv(sessions_dir);
    atomic_remove_stale(sessions_dir, NULL);
}

/* ---- state ---- */

static bool has_content(const ui_app *app)
{
    for (size_t k = 0; k < app->n_convs; k++)
        for (size_t i = 0; i < app->convs[k]->n_msgs; i++) {
            const ui_msg *m = &app->convs[k]->msgs[i];
            if (m->len > 0 || strcmp(m->role, "assistant") != 0)
                return true;
        }
    return false;
}

/* Names this session's file when it has none: the time, the pid, and a
 * counter should that name exist (a second session resumed in one second). */
static void name_own(autosave *a)
{
    if (a->own[0])
        return;
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    for (int k = 0; k < 1000; k++) {
        if (k == 0)
            snprintf(a->own, sizeof a->own, "%s/%s-%ld.json", a->dir, stamp, (long)getpid());
        else
            snprintf(a->own, sizeof a->own, "%s/%s-%ld-%d.json", a->dir, stamp, (long)getpid(), k);
        if (access(a->own, F_OK) != 0)
            return;
    }
}

/* Finds the newest session other than ours and reads its summary; a file
 * that does not parse (not ours to judge: left as it is) is passed over. */
static void find_last(autosave *a)
{
    a->last[0] = 0;
    a->offer = false;
    session_file *v;
    size_t n = list_sessions(a->dir, &v);
    for (size_t i = 0; i < n && i < 8; i++) {
        if (a->own[0] && !strcmp(v[i].path, a->own))
            continue;
        char err[256];
        if (store_peek(v[i].path, &a->last_sum, err, sizeof err)) {
            snprintf(a->last, sizeof a->last, "%s", v[i].path);
            a->last_mtime = v[i].mtime.tv_sec;
            a->offer = true;
            break;
        }
    }
    free_sessions(v, n);
}

void autosave_init(ui_app *app, bool enabled)
{
    autosave *a = calloc(1, sizeof *a);
    if (!a)
        return;
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    a->enabled = enabled;
    app->autosave = a;
    char state[4096];
    autosave_state_dir(state, sizeof state);
    if (!state[0]) {
        if (enabled)
            autosave_note(
                app, UI_MSG_WARN,
                "autosave off: neither XDG_STATE_HOME nor HOME is set (/save FILE keeps a conversation)");
        a->enabled = false;
        return;
    }
    snprintf(a->dir, sizeof a->dir, "%s/sessions", state);
    if (enabled) {
        if (!atomic_mkdir_p(a->dir) || access(a->dir, W_OK | X_OK) != 0) {
            /* kept enabled: every turn tries again, the directory may be fixed */
            /* the reason first: the status line may cut the rest */
            autosave_note(app, UI_MSG_ERROR,
                          "autosave: %s, conversations are not saved; /save FILE elsewhere keeps them (%s)",
                          strerror(errno), a->dir);
            a->failing = true;
        } else {
            autosave_prune(a->dir, AUTOSAVE_KEEP - 1); /* room for this one */
        }
    }
    find_last(a);
}

void autosave_note(ui_app *app, enum ui_msg_level lvl, const char *fmt, ...)
{
    char text[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap); // NOLINT(clang-analyzer-valist.Uninitialized)
    va_end(ap);
    autosave *a = app->autosave;
    if (!a) {
        ui_message(app, lvl, "%s", text);
        return;
    }
    size_t l = strlen(a->note);
    snprintf(a->note + l, sizeof a->note - l, "%s%s", l ? "; " : "", text);
    if (!l || lvl > a->note_level)
        a->note_level = lvl;
}

bool autosave_note_pending(const ui_app *app)
{
    return app->autosave && app->autosave->note[0];
}

const char *autosave_last_path(const ui_app *app)
{
    return app->autosave && app->autosave->last[0] ? app->autosave->last : NULL;
}

const store_summary *autosave_last_summary(const ui_app *app)
{
    return autosave_last_path(app) ? &app->autosave->last_sum : NULL;
}

static void format_age(time_t t, char *buf, size_t cap)
{
    double age = difftime(time(NULL), t);
    if (age < 60)
        snprintf(buf, cap, "just now");
    else if (age < 3600)
        snprintf(buf, cap, "%d min ago", (int)(age / 60));
    else if (age < 86400)
        snprintf(buf, cap, "%d h ago", (int)(age / 3600));
    else {
        struct tm tm;
        localtime_r(&t, &tm);
        strftime(buf, cap, "%Y-%m-%d %H:%M", &tm);
    }
}

void autosave_offer_text(const ui_app *app, char *buf, size_t cap)
{
    const store_summary *s = autosave_last_summary(app);
    if (!s) {
        if (cap)
            buf[0] = 0;
        return;
    }
    char age[32], convs[32] = "";
    format_age(app->autosave->last_mtime, age, sizeof age);
    const char *model = strrchr(s->model, '/');
    model = model ? model + 1 : s->model;
    if (s->n_convs > 1)
        snprintf(convs, sizeof convs, " in %zu chats", s->n_convs);
    snprintf(buf, cap, "%s%s%s%s%zu message%s%s \xc2\xb7 %s%s%s", s->title[0] ? "\xe2\x80\x9c" : "", s->title,
             s->title[0] ? "\xe2\x80\x9d" : "", s->title[0] ? " \xc2\xb7 " : "", s->n_msgs,
             s->n_msgs == 1 ? "" : "s", convs, model[0] ? model : "", model[0] ? " \xc2\xb7 " : "", age);
}

/* ---- writing ---- */

static void *writer_main(void *arg)
{
    autosave *a = arg;
    pthread_mutex_lock(&a->mu);
    for (;;) {
        while (!a->job && !a->quit)
            pthread_cond_wait(&a->cv, &a->mu);
        if (!a->job)
            break;
        char *job = a->job;
        char path[AUTOSAVE_PATH_MAX];
        snprintf(path, sizeof path, "%s", a->job_path);
        a->job = NULL;
        a->busy = true;
        pthread_mutex_unlock(&a->mu);
        char err[640] = "";
        bool ok = atomic_write_file(path, job, strlen(job), err, sizeof err);
        int e = errno;
        free(job);
        pthread_mutex_lock(&a->mu);
        a->busy = false;
        a->result_ok = ok;
        a->result_errno = ok ? 0 : e;
        snprintf(a->result_err, sizeof a->result_err, "%s", err);
        a->result_seq++;
        pthread_cond_broadcast(&a->cv);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

/* Waits until the writer has nothing queued or in hand (it shares the
 * temporary file name of this process with a synchronous save). */
static void writer_wait_idle(autosave *a)
{
    if (!a->thr_started)
        return;
    pthread_mutex_lock(&a->mu);
    while (a->job || a->busy)
        pthread_cond_wait(&a->cv, &a->mu);
    pthread_mutex_unlock(&a->mu);
}

static bool writer_start(autosave *a)
{
    if (a->thr_started)
        return true;
    /* signals stay with the UI thread, whose poll() they interrupt */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    a->thr_started = pthread_create(&a->thr, NULL, writer_main, a) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return a->thr_started;
}

/* A synchronous save of the current state into our file. */
static bool save_now(ui_app *app, autosave *a, char *err, size_t errlen)
{
    char *text = store_serialize(app, err, errlen);
    if (!text)
        return false;
    writer_wait_idle(a);
    name_own(a);
    bool ok = atomic_write_file(a->own, text, strlen(text), err, errlen);
    free(text);
    if (ok)
        store_kv_save(app, a->own);
    return ok;
}

void autosave_request(ui_app *app)
{
    autosave *a = app->autosave;
    if (!a || !a->enabled || (!has_content(app) && !a->own[0]))
        return;
    char err[256];
    char *text = store_serialize(app, err, sizeof err);
    if (!text) {
        ui_message(app, UI_MSG_ERROR, "autosave failed: %s", err);
        return;
    }
    name_own(a);
    if (!writer_start(a)) { /* no thread: write here */
        char werr[640];
        bool ok = atomic_write_file(a->own, text, strlen(text), werr, sizeof werr);
        int e = errno;
        free(text);
        if (!ok)
            ui_message(app, UI_MSG_ERROR,
                       "autosave failed: %s; /save FILE elsewhere keeps the conversations (%s)", strerror(e),
                       werr);
        return;
    }
    pthread_mutex_lock(&a->mu);
    free(a->job); /* an older snapshot not written yet: this one has everything */
    a->job = text;
    snprintf(a->job_path, sizeof a->job_path, "%s", a->own);
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
    store_kv_save(app, a->own); /* the engine writes it, the writer thread the session */
}

void autosave_poll(ui_app *app)
{
    autosave *a = app->autosave;
    if (a && a->note[0] && app->state != UI_STATE_LOADING) {
        ui_message(app, a->note_level, "%s", a->note);
        a->note[0] = 0;
    }
    if (!a || !a->thr_started)
        return;
    pthread_mutex_lock(&a->mu);
    unsigned long seq = a->result_seq;
    bool ok = a->result_ok;
    int e = a->result_errno;
    char err[640];
    snprintf(err, sizeof err, "%s", a->result_err);
    pthread_mutex_unlock(&a->mu);
    if (seq == a->shown_seq)
        return;
    a->shown_seq = seq;
    if (!ok) {
        ui_message(app, UI_MSG_ERROR,
                   "autosave failed: %s; /save FILE elsewhere keeps the conversations (%s)", strerror(e),
                   err);
        a->failing = true;
    } else if (a->failing) {
        a->failing = false;
        ui_message(app, UI_MSG_INFO, "autosave works again: %s", a->own);
    }
}

/* ---- resume ---- */

static bool in_dir(const char *path, const char *dir)
{
    char *rp = realpath(path, NULL), *rd = realpath(dir, NULL);
    bool in = false;
    if (rp && rd) {
        size_t l = strlen(rd);
        in = !strncmp(rp, rd, l) && rp[l] == '/' && !strchr(rp + l + 1, '/');
    }
    free(rp);
    free(rd);
    return in;
}

bool autosave_resume(ui_app *app, const char *path, char *err, size_t errlen)
{
    autosave *a = app->autosave;
    char src[AUTOSAVE_PATH_MAX];
    if (path && *path)
        snprintf(src, sizeof src, "%s", path);
    else if (a && a->last[0])
        snprintf(src, sizeof src, "%s", a->last);
    else {
        snprintf(err, errlen, "no autosaved conversation to resume");
        return false;
    }
    if (ui_busy(app)) {
        snprintf(err, errlen, "generating: Esc stops first");
        return false;
    }
    char serr[640];
    if (a && a->enabled && a->dir[0] && has_content(app) && !save_now(app, a, serr, sizeof serr)) {
        snprintf(err, errlen, "cannot save the current conversations first: %s", serr);
        return false;
    }
    if (!store_load(app, src, err, errlen))
        return false;
    if (a) {
        writer_wait_idle(a);
        /* a session file goes on in place; any other file is left alone and
         * this session continues in a new one */
        if (a->dir[0] && in_dir(src, a->dir))
            snprintf(a->own, sizeof a->own, "%s", src);
        else
            a->own[0] = 0;
        find_last(a);
        a->offer = false;
    }
    return true;
}

void autosave_draw_offer(ui_app *app, ui_rect r)
{
    autosave *a = app->autosave;
    if (!a || !a->offer || !a->last[0] || app->n_convs != 1 || ui_current(app)->n_msgs ||
        ui_current(app)->system[0] || r.h < 6 || r.w < 8)
        return;
    const store_summary *s = &a->last_sum;
    char age[32], line[4200];
    format_age(a->last_mtime, age, sizeof age);
    const char *model = strrchr(s->model, '/');
    model = model ? model + 1 : s->model;
    int y = r.y + r.h / 2 + 2, w = r.w - 3;
    int col = draw_printf(y, r.x + 2, w, theme_attr(THEME_HEADER), "Last conversation (%s)%s", age,
                          s->title[0] ? ": " : "");
    draw_str(y, r.x + 2 + col, w - col, s->title, theme_attr(THEME_DIM));
    snprintf(line, sizeof line, "%zu message%s%s%s. /resume continues it.", s->n_msgs,
             s->n_msgs == 1 ? "" : "s", model[0] ? ", " : "", model);
    draw_str(y + 1, r.x + 2, w, line, theme_attr(THEME_DIM));
}

/* At exit, when the state directory failed: a new file in $TMPDIR. */
static bool rescue(const char *text, char *path, size_t cap)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(path, cap, "%s/tokscope-rescue-XXXXXX.json", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemps(path, 5);
    if (fd < 0)
        return false;
    size_t n = strlen(text);
    bool ok = true;
    for (const char *p = text; ok && n > 0;) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        ok = w > 0;
        if (ok) {
            p += w;
            n -= (size_t)w;
        }
    }
    ok = ok && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    if (!ok)
        unlink(path);
    return ok;
}

/* The reply the exit cuts ends here, as interrupted: saved and shown so,
 * its reasoning split as for a reply stopped by hand. */
static void interrupt_reply(ui_app *app)
{
    ui_conv *c = app->gen_conv_id >= 0 ? ui_conv_by_id(app, app->gen_conv_id) : NULL;
    if (!c || app->gen_msg >= c->n_msgs || !c->msgs[app->gen_msg].streaming)
        return;
    ui_msg *m = &c->msgs[app->gen_msg];
    m->streaming = false;
    m->done_reason = CONV_DONE_INTERRUPTED;
    think_end_turn(app, m);
}

bool autosave_finish(ui_app *app, char *msg, size_t cap)
{
    interrupt_reply(app);
    autosave *a = app->autosave;
    if (cap)
        msg[0] = 0;
    if (!a)
        return true;
    bool ok = true;
    if (a->thr_started) {
        writer_wait_idle(a);
        pthread_mutex_lock(&a->mu);
        a->quit = true;
        pthread_cond_signal(&a->cv);
        pthread_mutex_unlock(&a->mu);
        pthread_join(a->thr, NULL);
        a->thr_started = false;
    }
    if (a->enabled && (has_content(app) || a->own[0])) {
        char err[640] = "";
        char *text = store_serialize(app, err, sizeof err);
        if (!text) {
            snprintf(msg, cap, "autosave failed: %s; the conversations are lost", err);
            ok = false;
        } else {
            name_own(a);
            if (!atomic_write_file(a->own, text, strlen(text), err, sizeof err)) {
                char rp[4096];
                ok = rescue(text, rp, sizeof rp);
                snprintf(msg, cap, "autosave failed: %s; %s %s", err,
                         ok ? "the conversations are saved in" : "could not write them to",
                         ok ? rp : "$TMPDIR either");
            }
            free(text);
        }
    }
    free(a->job);
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
    free(a);
    app->autosave = NULL;
    return ok;
}
