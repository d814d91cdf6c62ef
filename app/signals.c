/* SIGBUS handler. Only async-signal-safe calls: write, tcsetattr, pause,
 * _exit, a lock-free atomic flag, and gguf_mapping_of, which reads its table
 * without locks. */
#include "signals.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "gguf/gguf.h"

static struct termios saved_tty;
static volatile sig_atomic_t tty_saved;

void signals_save_terminal(void)
{
    if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved_tty) == 0)
        tty_saved = 1;
}

static void put(int fd, const char *s)
{
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

/* A message assembled on the stack, so that it leaves in one write(). */
typedef struct msg {
    char b[4608];
    size_t n;
} msg;

static void msg_add(msg *m, const char *s)
{
    while (*s && m->n < sizeof m->b - 1)
        m->b[m->n++] = *s++;
}

static void msg_add_u64(msg *m, unsigned long long v)
{
    char b[24];
    int i = (int)sizeof b;
    b[--i] = 0;
    do
        b[--i] = (char)('0' + v % 10);
    while ((v /= 10) && i > 0);
    msg_add(m, b + i);
}

/* Set by the first thread to fault on a vanished page: several workers
 * reading the same truncated mapping fault at once, and only one may
 * speak (lock-free atomics are async-signal-safe). */
static atomic_flag reporting = ATOMIC_FLAG_INIT;

static void on_sigbus(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    const char *path;
    size_t off;
    if (!gguf_mapping_of(si->si_addr, &path, &off)) {
        /* not a model file: the default action, once the instruction faults again */
        signal(sig, SIG_DFL);
        return;
    }
    if (atomic_flag_test_and_set(&reporting)) {
        /* another thread is reporting and will _exit the process: returning
         * would fault again, so wait for the end here, quietly */
        for (;;)
            pause();
    }
    if (tty_saved) {
        tcsetattr(STDIN_FILENO, TCSANOW, &saved_tty);
        /* leave the alternate screen and the modes the TUI turned on:
         * mouse reports, bracketed paste, application keys; show the cursor */
        if (isatty(STDOUT_FILENO))
            put(STDOUT_FILENO,
                "\033[?1000l\033[?1002l\033[?1006l\033[?2004l\033[?1l\033>\033[0m\033[?25h\033[?1049l\r\n");
    }
    msg m;
    m.n = 0;
    msg_add(&m, "tokscope: ");
    msg_add(&m, path);
    msg_add(&m, ": the model file was truncated or changed while in use (its byte ");
    msg_add_u64(&m, off);
    msg_add(&m, " is gone); stopping\n");
    m.b[m.n - 1] = '\n'; /* a path that filled the buffer still ends the line */
    ssize_t w = write(STDERR_FILENO, m.b, m.n);
    (void)w;
    _exit(1);
}

void signals_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
}
