/* Model discovery and the picker screen. */
#include "picker.h"

#include <curses.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "draw.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "gguf/tensor.h"
#include "theme.h"

#define PICKER_MAX_DEPTH 8
#define PICKER_MAX_FILES 20000 /* directory entries looked at, in total */
#define PICKER_MAX_ENTRIES 4096

static void add_dir(picker_dir *dirs, size_t cap, size_t *n, const char *source, int magic_only, const char *fmt,
                    const char *a, const char *b)
{
    if (*n >= cap || !a || !*a)
        return;
    picker_dir *d = &dirs[*n];
    snprintf(d->path, sizeof d->path, fmt, a, b ? b : "");
    d->source = source;
    d->magic_only = magic_only;
    for (size_t i = 0; i < *n; i++)
        if (!strcmp(dirs[i].path, d->path))
            return;
    (*n)++;
}

size_t picker_dirs(const char *const *extra, size_t n_extra, picker_dir *dirs, size_t cap)
{
    size_t n = 0;
    const char *home = getenv("HOME");
    for (size_t i = 0; i < n_extra; i++) {
        if (extra[i][0] == '~' && extra[i][1] == '/' && home)
            add_dir(dirs, cap, &n, "config", 0, "%s%s", home, extra[i] + 1);
        else
            add_dir(dirs, cap, &n, "config", 0, "%s%s", extra[i], "");
    }
    add_dir(dirs, cap, &n, "models", 0, "%s%s", "./models", "");
    add_dir(dirs, cap, &n, "models", 0, "%s%s", home, "/models");
    const char *hub = getenv("HF_HUB_CACHE");
    const char *hf_home = getenv("HF_HOME");
    if (hub && *hub)
        add_dir(dirs, cap, &n, "huggingface", 0, "%s%s", hub, "");
    else if (hf_home && *hf_home)
        add_dir(dirs, cap, &n, "huggingface", 0, "%s%s", hf_home, "/hub");
    else
        add_dir(dirs, cap, &n, "huggingface", 0, "%s%s", home, "/.cache/huggingface/hub");
    add_dir(dirs, cap, &n, "lmstudio", 0, "%s%s", home, "/.lmstudio/models");
    add_dir(dirs, cap, &n, "lmstudio", 0, "%s%s", home, "/.cache/lm-studio/models");
    const char *ollama = getenv("OLLAMA_MODELS");
    if (ollama && *ollama)
        add_dir(dirs, cap, &n, "ollama", 1, "%s%s", ollama, "/blobs");
    add_dir(dirs, cap, &n, "ollama", 1, "%s%s", home, "/.ollama/models/blobs");
    return n;
}

static bool has_gguf_magic(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char m[4];
    bool ok = read(fd, m, 4) == 4 && !memcmp(m, "GGUF", 4);
    close(fd);
    return ok;
}

static bool ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcasecmp(s + a - b, suf);
}

typedef struct scan_state {
    picker_entry *v;
    size_t n, cap;
    size_t seen;
    char **real; /* realpaths already listed (symlinked HF snapshots, duplicates) */
} scan_state;

static void add_file(scan_state *st, const char *path, const char *fname, const picker_dir *d)
{
    if (st->n >= PICKER_MAX_ENTRIES)
        return;
    char *rp = realpath(path, NULL);
    if (!rp)
        return;
    for (size_t i = 0; i < st->n; i++)
        if (!strcmp(st->real[i], rp)) {
            free(rp);
            return;
        }
    if (!has_gguf_magic(rp)) {
        free(rp);
        return;
    }
    struct stat sb;
    if (stat(rp, &sb) != 0) {
        free(rp);
        return;
    }
    if (st->n == st->cap) {
        size_t nc = st->cap ? st->cap * 2 : 32;
        picker_entry *nv = realloc(st->v, nc * sizeof *nv);
        char **nr = realloc(st->real, nc * sizeof *nr);
        if (nv)
            st->v = nv;
        if (nr)
            st->real = nr;
        if (!nv || !nr) {
            free(rp);
            return;
        }
        st->cap = nc;
    }
    picker_entry *e = &st->v[st->n];
    memset(e, 0, sizeof *e);
    e->path = strdup(path);
    e->source = d->source;
    e->size = (uint64_t)sb.st_size;
    snprintf(e->arch, sizeof e->arch, "?");
    snprintf(e->quant, sizeof e->quant, "?");
    char err[256];
    char *gname = NULL;
    gguf_ctx *g = gguf_open(rp, err, sizeof err);
    if (g) {
        gguf_str s;
        if (gguf_get_str(g, "general.architecture", &s))
            snprintf(e->arch, sizeof e->arch, "%.*s", (int)(s.len < 31 ? s.len : 31), s.ptr);
        uint32_t ft;
        const char *qn = NULL;
        if (gguf_get_u32(g, "general.file_type", &ft))
            qn = model_file_type_name(ft);
        if (!qn || !*qn) {
            /* no file_type (llama2.c conversions): name the type of the biggest tensor */
            const gguf_tensor *big = NULL;
            for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
                const gguf_tensor *t = gguf_tensor_at(g, i);
                if (!big || t->n_elements > big->n_elements)
                    big = t;
            }
            if (big)
                qn = tensor_type_name(big->type);
        }
        if (qn && !strncmp(qn, "MOSTLY_", 7))
            qn += 7;
        if (qn && !strncmp(qn, "ALL_", 4))
            qn += 4;
        snprintf(e->quant, sizeof e->quant, "%s", qn && *qn ? qn : "?");
        gname = gguf_get_str_dup(g, "general.name");
        gguf_close(g);
    } else {
        snprintf(e->arch, sizeof e->arch, "invalid");
    }
    if (ends_with(fname, ".gguf") || !gname)
        e->name = strdup(fname);
    else {
        size_t l = strlen(gname) + 16;
        e->name = malloc(l);
        if (e->name)
            snprintf(e->name, l, "%s (blob)", gname);
    }
    free(gname);
    if (!e->path || !e->name) {
        free(e->path);
        free(e->name);
        free(rp);
        return;
    }
    st->real[st->n] = rp;
    st->n++;
}

static void walk(scan_state *st, const char *dir, const picker_dir *d, int depth)
{
    if (depth > PICKER_MAX_DEPTH)
        return;
    DIR *dh = opendir(dir);
    if (!dh)
        return;
    struct dirent *de;
    while ((de = readdir(dh)) && st->seen < PICKER_MAX_FILES) {
        st->seen++;
        if (de->d_name[0] == '.')
            continue;
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >= (int)sizeof path)
            continue;
        struct stat lsb, sb;
        if (lstat(path, &lsb) != 0)
            continue;
        if (S_ISDIR(lsb.st_mode)) {
            walk(st, path, d, depth + 1); /* symlinked directories are not followed: no loops */
            continue;
        }
        if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size < 8)
            continue;
        if (ends_with(de->d_name, ".gguf") || (d->magic_only && !strchr(de->d_name, '.')))
            add_file(st, path, de->d_name, d);
    }
    closedir(dh);
}

static int cmp_entry(const void *a, const void *b)
{
    const picker_entry *x = a, *y = b;
    return strcasecmp(x->name, y->name);
}

size_t picker_scan(const picker_dir *dirs, size_t n_dirs, picker_entry **out)
{
    scan_state st = {0};
    for (size_t i = 0; i < n_dirs; i++)
        walk(&st, dirs[i].path, &dirs[i], 0);
    for (size_t i = 0; i < st.n; i++)
        free(st.real[i]);
    free(st.real);
    if (st.n)
        qsort(st.v, st.n, sizeof *st.v, cmp_entry);
    *out = st.v;
    return st.n;
}

void picker_free(picker_entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(e[i].path);
        free(e[i].name);
    }
    free(e);
}

static void fmt_size(uint64_t b, char *buf, size_t cap)
{
    if (b >= (1ull << 30))
        snprintf(buf, cap, "%.1f GiB", (double)b / (1ull << 30));
    else if (b >= (1ull << 20))
        snprintf(buf, cap, "%.1f MiB", (double)b / (1ull << 20));
    else
        snprintf(buf, cap, "%.0f KiB", (double)b / 1024.0);
}

/* The offer to resume the last conversation: the first row while no
 * filter is typed. */
static void draw_offer(int y, const char *offer, bool selected)
{
    int attr = selected ? theme_attr(THEME_SELECTED) : 0;
    if (selected)
        draw_fill(y, 0, COLS, attr);
    int x = 1 + draw_str(y, 1, COLS - 2, "\xe2\x86\xbb Resume the last conversation: ", attr | A_BOLD);
    draw_str(y, x, COLS - 1 - x, offer, attr);
}

static void picker_draw(const picker_entry *all, size_t n_all, const size_t *idx, size_t n, size_t sel,
                        size_t *top, const picker_dir *dirs, size_t n_dirs, const char *filter,
                        const char *offer)
{
    erase();
    if (LINES < 5 || COLS < 20) {
        draw_str(0, 0, COLS, "terminal too small", A_BOLD);
        refresh();
        return;
    }
    draw_fill(0, 0, COLS, theme_attr(THEME_TITLE));
    draw_str(0, 0, COLS,
             " tokscope \xe2\x80\x94 choose a model   Enter open  \xe2\x86\x91\xe2\x86\x93 move  type to filter  Esc quit",
             theme_attr(THEME_TITLE) | A_BOLD);
    if (n_all == 0) {
        int y0 = offer ? 4 : 2;
        if (offer)
            draw_offer(2, offer, true);
        draw_str(y0, 2, COLS - 4, "No GGUF models found. Searched:", theme_attr(THEME_HEADER));
        for (size_t i = 0; i < n_dirs && (int)(y0 + 1 + i) < LINES - 2; i++)
            draw_printf(y0 + 1 + (int)i, 4, COLS - 6, 0, "%-12s %s", dirs[i].source, dirs[i].path);
        draw_str(LINES - 1, 2, COLS - 4, "Start with tokscope -m FILE.gguf, or add [paths] model_dirs to the config. Esc quits.",
                 theme_attr(THEME_DIM));
        refresh();
        return;
    }
    int name_w = COLS - 2 - 10 - 1 - 10 - 1 - 10 - 1 - 12;
    if (name_w < 12)
        name_w = 12;
    draw_printf(1, 1, COLS - 2, theme_attr(THEME_HEADER), "%-*s %10s %-10s %-10s %-12s", name_w, "model", "size",
                "arch", "quant", "source");
    int rows = LINES - 3;
    size_t off = offer ? 1 : 0; /* rows before the models */
    if (sel < *top)
        *top = sel;
    if (sel >= *top + (size_t)rows)
        *top = sel - (size_t)rows + 1;
    if (n == 0)
        draw_printf(3, 2, COLS - 4, theme_attr(THEME_DIM), "no model matches '%s'", filter);
    for (int r = 0; r < rows && *top + (size_t)r < n + off; r++) {
        if (*top + (size_t)r < off) {
            draw_offer(2 + r, offer, *top + (size_t)r == sel);
            continue;
        }
        const picker_entry *p = &all[idx[*top + (size_t)r - off]];
        bool s = *top + (size_t)r == sel;
        int attr = s ? theme_attr(THEME_SELECTED) : 0;
        if (s)
            draw_fill(2 + r, 0, COLS, attr);
        char size[32];
        fmt_size(p->size, size, sizeof size);
        int used = draw_str(2 + r, 1, name_w, p->name, attr | (s ? A_BOLD : 0));
        (void)used;
        draw_printf(2 + r, 1 + name_w, COLS - 1 - name_w, attr, " %10s %-10s %-10s %-12s", size, p->arch, p->quant,
                    p->source);
    }
    if (filter[0])
        draw_printf(LINES - 1, 1, COLS - 2, theme_attr(THEME_HEADER), "filter: %s_  (%zu of %zu)", filter, n, n_all);
    else if (sel < off)
        draw_str(LINES - 1, 1, COLS - 2, "Enter: the conversation comes back, with its model and parameters",
                 theme_attr(THEME_DIM));
    else if (n)
        draw_printf(LINES - 1, 1, COLS - 2, theme_attr(THEME_DIM), "%zu/%zu  %s", sel - off + 1, n,
                    all[idx[sel - off]].path);
    refresh();
}

char *picker_run(const char *const *extra, size_t n_extra)
{
    return picker_run_offer(extra, n_extra, NULL, NULL);
}

char *picker_run_offer(const char *const *extra, size_t n_extra, const char *offer, bool *resume)
{
    if (resume)
        *resume = false;
    picker_dir dirs[32];
    size_t n_dirs = picker_dirs(extra, n_extra, dirs, 32);
    erase();
    draw_str(0, 0, COLS, "tokscope: looking for GGUF models...", A_BOLD);
    refresh();
    picker_entry *e;
    size_t n = picker_scan(dirs, n_dirs, &e);
    size_t sel = 0, top = 0;
    char *chosen = NULL;
    char filter[64] = "";
    size_t *idx = malloc((n ? n : 1) * sizeof *idx);
    size_t n_shown = 0;
    nodelay(stdscr, FALSE);
    for (bool refilter = true; idx;) {
        if (refilter) {
            /* case-insensitive substring of the name or the path */
            n_shown = 0;
            for (size_t i = 0; i < n; i++)
                if (!filter[0] || strcasestr(e[i].name, filter) || strcasestr(e[i].path, filter))
                    idx[n_shown++] = i;
            sel = 0; /* the first row: Enter opens what it says (the offer, when there is one) */
            top = 0;
            refilter = false;
        }
        const char *shown_offer = offer && !filter[0] ? offer : NULL;
        size_t off = shown_offer ? 1 : 0, n_items = n_shown + off;
        if (sel >= n_items)
            sel = n_items ? n_items - 1 : 0;
        picker_draw(e, n, idx, n_shown, sel, &top, dirs, n_dirs, filter, n ? shown_offer : offer);
        int k = getch();
        size_t fl = strlen(filter);
        if (k == 17 /* Ctrl-Q */ || k == 3 /* Ctrl-C */ || k == ERR)
            break;
        if (offer && (n == 0 || (off && sel == 0)) && (k == '\n' || k == '\r' || k == KEY_ENTER)) {
            *resume = true;
            break;
        }
        if (k == 27) {
            if (!fl)
                break;
            filter[0] = 0; /* Esc clears the filter first */
            refilter = true;
            continue;
        }
        int page = LINES - 3 > 1 ? LINES - 3 : 1;
        if (k == KEY_BACKSPACE || k == 127 || k == 8) {
            if (fl) {
                filter[fl - 1] = 0;
                refilter = true;
            }
        } else if (k >= 32 && k < 127) {
            if (fl + 1 < sizeof filter) {
                filter[fl] = (char)k;
                filter[fl + 1] = 0;
                refilter = true;
            }
        } else if (n_items == 0) {
            continue;
        } else if (k == KEY_UP && sel > 0)
            sel--;
        else if (k == KEY_DOWN && sel + 1 < n_items)
            sel++;
        else if (k == KEY_PPAGE)
            sel = sel > (size_t)page ? sel - (size_t)page : 0;
        else if (k == KEY_NPAGE)
            sel = sel + (size_t)page < n_items ? sel + (size_t)page : n_items - 1;
        else if (k == KEY_HOME)
            sel = 0;
        else if (k == KEY_END)
            sel = n_items - 1;
        else if ((k == '\n' || k == '\r' || k == KEY_ENTER) && sel >= off) {
            chosen = strdup(e[idx[sel - off]].path);
            break;
        }
    }
    free(idx);
    nodelay(stdscr, TRUE);
    picker_free(e, n);
    return chosen;
}
