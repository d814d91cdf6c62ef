/* Readline in callback mode, drawn by ncurses. */
#include "input.h"

#include <curses.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "atomic.h"
#include "draw.h"
#include "theme.h"
#include "utf8.h"
#include "wrap.h"

#define PROMPT "> "
#define PROMPT_W 2
#define HISTORY_MAX 1000

static char g_history_path[4096];
static int g_pending = EOF; /* the byte rl_getc hands to readline */
static int g_cur_y, g_cur_x;
static FILE *g_null;

static int input_getc(FILE *f)
{
    (void)f;
    int c = g_pending;
    g_pending = EOF;
    return c;
}

/* Readline batches typeahead by asking whether more input is waiting on its
 * input fd; the keys there belong to ncurses, so the answer is always no. */
static int input_available(void)
{
    return 0;
}

static void input_redisplay(void)
{
    /* the UI redraws from rl_line_buffer on its own schedule */
}

static void input_prep(int meta)
{
    (void)meta;
}

static void input_deprep(void)
{
}

static void input_line(char *line)
{
    /* Enter never reaches readline (input_key handles it); this only sees
     * EOF (Ctrl-D on an empty line), which the TUI ignores. */
    free(line);
}

void input_history_escape(const char *s, char *out, size_t cap)
{
    size_t o = 0;
    for (; *s && o + 3 < cap; s++) {
        if (*s == '\n') {
            out[o++] = '\\';
            out[o++] = 'n';
        } else if (*s == '\\') {
            out[o++] = '\\';
            out[o++] = '\\';
        } else if (*s != '\r')
            out[o++] = *s;
    }
    out[o] = 0;
}

void input_history_unescape(const char *s, char *out, size_t cap)
{
    size_t o = 0;
    for (; *s && o + 1 < cap; s++) {
        if (*s == '\\' && s[1] == 'n') {
            out[o++] = '\n';
            s++;
        } else if (*s == '\\' && s[1] == '\\') {
            out[o++] = '\\';
            s++;
        } else if (*s != '\n' && *s != '\r')
            out[o++] = *s;
    }
    out[o] = 0;
}

static void history_load(void)
{
    if (!g_history_path[0])
        return;
    FILE *f = fopen(g_history_path, "r");
    if (!f)
        return;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        char *buf = malloc((size_t)n + 1);
        if (!buf)
            break;
        input_history_unescape(line, buf, (size_t)n + 1);
        if (*buf)
            add_history(buf);
        free(buf);
    }
    free(line);
    fclose(f);
}

static void mkdir_p(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(tmp, 0700);
            *p = '/';
        }
}

static void history_save(void)
{
    if (!g_history_path[0])
        return;
    mkdir_p(g_history_path);
    /* built in memory, then replaced atomically as the autosave is (two
     * sessions quitting at once no longer share one temporary file) */
    char *mem = NULL;
    size_t mem_len = 0;
    FILE *f = open_memstream(&mem, &mem_len);
    if (!f)
        return;
    HIST_ENTRY **list = history_list();
    for (int i = 0; list && list[i]; i++) {
        size_t l = strlen(list[i]->line);
        char *buf = malloc(2 * l + 4);
        if (!buf)
            break;
        input_history_escape(list[i]->line, buf, 2 * l + 4);
        fprintf(f, "%s\n", buf);
        free(buf);
    }
    char err[256];
    if (fclose(f) == 0 && mem)
        atomic_write_file(g_history_path, mem, mem_len, err, sizeof err);
    free(mem);
}

void input_init(const char *history_path)
{
    snprintf(g_history_path, sizeof g_history_path, "%s", history_path ? history_path : "");
    g_null = fopen("/dev/null", "w");
    rl_readline_name = "tokscope";
    rl_instream = stdin;
    rl_outstream = g_null ? g_null : stderr;
    rl_getc_function = input_getc;
    rl_redisplay_function = input_redisplay;
    rl_input_available_hook = input_available;
    rl_prep_term_function = input_prep;
    rl_deprep_term_function = input_deprep;
    rl_catch_signals = 0;
    rl_catch_sigwinch = 0;
    rl_change_environment = 0;
    rl_inhibit_completion = 1;
    using_history();
    stifle_history(HISTORY_MAX);
    history_load();
    using_history(); /* start below the newest entry: Up recalls the last line */
    rl_callback_handler_install("", input_line);
    rl_variable_bind("bell-style", "none");
    rl_variable_bind("enable-bracketed-paste", "off");
    rl_variable_bind("horizontal-scroll-mode", "off");
}

void input_shutdown(void)
{
    /* text typed but not sent when tokscope quits goes to the history, as
     * Ctrl-C's clear keeps it, so Up recalls it next time (it was dropped) */
    if (!input_in_search())
        free(input_take());
    history_save();
    rl_callback_handler_remove();
    if (g_null) {
        rl_outstream = NULL;
        fclose(g_null);
        g_null = NULL;
    }
}

static void feed(int byte)
{
    g_pending = byte & 0xFF;
    rl_callback_read_char();
}

void input_insert(const char *s)
{
    rl_insert_text(s);
}

bool input_in_search(void)
{
    return RL_ISSTATE(RL_STATE_ISEARCH) != 0;
}

const char *input_text(void)
{
    return rl_line_buffer ? rl_line_buffer : "";
}

void input_set_text(const char *s)
{
    rl_replace_line(s ? s : "", 1);
    rl_point = rl_end;
}

char *input_take(void)
{
    char *s = strdup(input_text());
    if (!s)
        return NULL;
    bool blank = true;
    for (const char *p = s; *p; p++)
        if (*p != ' ' && *p != '\n' && *p != '\t')
            blank = false;
    if (!blank) {
        HIST_ENTRY *last = history_length > 0 ? history_get(history_base + history_length - 1) : NULL;
        if (!last || strcmp(last->line, s) != 0)
            add_history(s);
    }
    rl_replace_line("", 1);
    rl_point = rl_end = 0;
    using_history();
    return s;
}

/* Moves rl_point to the same column on the previous/next line of a
 * multi-line buffer; false when there is no such line. */
static bool move_line(int dir)
{
    const char *b = rl_line_buffer;
    int p = rl_point;
    int ls = p;
    while (ls > 0 && b[ls - 1] != '\n')
        ls--;
    int col = p - ls;
    if (dir < 0) {
        if (ls == 0)
            return false;
        int ps = ls - 1;
        while (ps > 0 && b[ps - 1] != '\n')
            ps--;
        int plen = ls - 1 - ps;
        rl_point = ps + (col < plen ? col : plen);
        return true;
    }
    int le = p;
    while (le < rl_end && b[le] != '\n')
        le++;
    if (le >= rl_end)
        return false;
    int ns = le + 1, ne = ns;
    while (ne < rl_end && b[ne] != '\n')
        ne++;
    rl_point = ns + (col < ne - ns ? col : ne - ns);
    return true;
}

void input_key(int key)
{
    switch (key) {
    case KEY_LEFT: rl_backward_char(1, 0); return;
    case KEY_RIGHT: rl_forward_char(1, 0); return;
    case KEY_HOME: rl_beg_of_line(1, 0); return;
    case KEY_END: rl_end_of_line(1, 0); return;
    case KEY_DC: rl_delete(1, 0); return;
    case KEY_BACKSPACE:
    case 127:
    case 8: rl_rubout(1, 0); return;
    case KEY_UP:
        if (!move_line(-1))
            rl_get_previous_history(1, 0);
        return;
    case KEY_DOWN:
        if (!move_line(1))
            rl_get_next_history(1, 0);
        return;
    default:
        if (key >= 0 && key < 256)
            feed(key);
    }
}

static size_t wrap_input(int w, wrap_line **lines)
{
    const char *s = input_text();
    size_t n = strlen(s);
    size_t nl = wrap_text(s, n, w, NULL, 0);
    *lines = malloc(nl * sizeof **lines);
    if (!*lines)
        return 0;
    wrap_text(s, n, w, *lines, nl);
    return nl;
}

int input_rows(int w)
{
    wrap_line *lines;
    size_t n = wrap_input(w - PROMPT_W > 1 ? w - PROMPT_W : 1, &lines);
    free(lines);
    return n ? (int)n : 1;
}

void input_draw(ui_rect r, bool focused, const char *label)
{
    if (r.h <= 0)
        return;
    draw_hline(r.y, r.x, r.w, theme_attr(focused ? THEME_BORDER_FOCUS : THEME_BORDER));
    if (RL_ISSTATE(RL_STATE_ISEARCH) && rl_display_prompt)
        draw_printf(r.y, r.x + 2, r.w - 4, theme_attr(THEME_HEADER), " %s ", rl_display_prompt); /* Ctrl-R */
    else if (label)
        draw_printf(r.y, r.x + 2, r.w - 4, theme_attr(THEME_DIM), " %s ", label);
    int rows = r.h - 1;
    if (rows <= 0)
        return;
    int tw = r.w - PROMPT_W > 1 ? r.w - PROMPT_W : 1;
    wrap_line *lines;
    size_t n = wrap_input(tw, &lines);
    if (!n)
        return;
    const char *s = input_text();
    size_t point = rl_point > 0 ? (size_t)rl_point : 0;
    size_t cl = 0;
    for (size_t i = 0; i < n; i++)
        if (lines[i].start <= point)
            cl = i;
    int ccol = wrap_str_width(s + lines[cl].start,
                              point - lines[cl].start > lines[cl].len ? lines[cl].len : point - lines[cl].start);
    if (point > lines[cl].start + lines[cl].len && s[lines[cl].start + lines[cl].len] != '\n')
        ccol++;
    if (ccol >= tw)
        ccol = tw - 1;
    size_t top = cl + 1 > (size_t)rows ? cl + 1 - (size_t)rows : 0;
    for (int row = 0; row < rows && top + (size_t)row < n; row++) {
        const wrap_line *l = &lines[top + (size_t)row];
        if (top + (size_t)row == 0)
            draw_str(r.y + 1 + row, r.x, PROMPT_W, PROMPT, theme_attr(focused ? THEME_USER : THEME_DIM));
        draw_text(r.y + 1 + row, r.x + PROMPT_W, tw, s + l->start, l->len, 0);
    }
    g_cur_y = r.y + 1 + (int)(cl - top);
    g_cur_x = r.x + PROMPT_W + ccol;
    free(lines);
}

void input_cursor(int *y, int *x)
{
    *y = g_cur_y;
    *x = g_cur_x;
}

static char *g_paste;
static size_t g_paste_len, g_paste_cap;

static void paste_put(const char *s, size_t n)
{
    if (g_paste_len + n > g_paste_cap) {
        size_t cap = g_paste_cap ? g_paste_cap : 4096;
        while (cap < g_paste_len + n)
            cap *= 2;
        char *p = realloc(g_paste, cap);
        if (!p)
            return; /* out of memory: the rest of the paste is dropped */
        g_paste = p;
        g_paste_cap = cap;
    }
    memcpy(g_paste + g_paste_len, s, n);
    g_paste_len += n;
}

void input_paste_add(int byte)
{
    if (byte == '\r' || byte == '\n')
        paste_put("\n", 1);
    else
        paste_put((const char *)&(char){(char)byte}, 1);
}

void input_paste_flush(bool end)
{
    size_t n = g_paste_len, keep = 0;
    if (!end) {
        /* a character whose last bytes have not arrived yet waits for them */
        for (size_t k = 1; k <= 3 && k <= n; k++) {
            unsigned char c = (unsigned char)g_paste[n - k];
            if ((c & 0xC0) == 0x80)
                continue;
            size_t want = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
            if (want > k)
                keep = k;
            break;
        }
    }
    if (n - keep > 0) {
        char *clean = utf8_sanitize(g_paste, n - keep, NULL);
        if (clean)
            rl_insert_text(clean);
        free(clean);
    }
    memmove(g_paste, g_paste + n - keep, keep);
    g_paste_len = keep;
    if (end) {
        free(g_paste);
        g_paste = NULL;
        g_paste_len = g_paste_cap = 0;
    }
}
