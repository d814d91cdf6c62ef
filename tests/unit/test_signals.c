/* app/signals.c: several threads faulting on a truncated model mapping at
 * once print one message, whole, and the process exits 1.
 *
 * The race is made certain rather than likely: the child's stderr is a pipe
 * that is already full, so the first reporter blocks in write() until the
 * parent drains it, half a second later; by then every other thread has
 * faulted too. A handler without a single reporter writes from all of them,
 * and its pieces interleave. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "gguf/gguf.h"
#include "signals.h"
#include "testutil.h"

#define N_THREADS 8

static pthread_barrier_t start;
static const volatile unsigned char *victim;
static size_t victim_size;

static void *reader(void *arg)
{
    const size_t i = (size_t)(uintptr_t)arg;
    pthread_barrier_wait(&start);
    /* each thread its own vanished page, near the end of the file */
    const size_t page = 4096;
    volatile unsigned char sink = victim[victim_size - 1 - i * page];
    (void)sink;
    return NULL;
}

/* In the child: map path, truncate it, fault from N_THREADS at once. */
static void child(const char *path)
{
    signals_install();
    char err[512];
    gguf_ctx *g = gguf_open(path, err, sizeof err);
    if (!g || gguf_n_tensors(g) < 1)
        _exit(3);
    const gguf_tensor *t = gguf_tensor_at(g, 0);
    victim = (const unsigned char *)t->data - gguf_data_offset(g) - t->offset;
    victim_size = gguf_file_size(g);
    if (victim_size < (N_THREADS + 2) * 4096 || truncate(path, 4096) != 0)
        _exit(4);
    pthread_barrier_init(&start, NULL, N_THREADS);
    pthread_t th[N_THREADS];
    for (size_t i = 0; i < N_THREADS; i++)
        pthread_create(&th[i], NULL, reader, (void *)(uintptr_t)i);
    for (size_t i = 0; i < N_THREADS; i++)
        pthread_join(th[i], NULL);
    _exit(5); /* no fault at all: the test is broken */
}

static void test_one_reporter(void **state)
{
    (void)state;
    const char *model = TESTDATA_REQUIRE("models/stories260K.gguf");
    char dir[] = "/tmp/test_signals.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], cmd[1024];
    snprintf(path, sizeof path, "%s/model.gguf", dir);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", model, path);
    assert_int_equal(system(cmd), 0);

    int fd[2];
    assert_int_equal(pipe(fd), 0);
    /* fill the pipe, then make writes to it block again */
    fcntl(fd[1], F_SETFL, O_NONBLOCK);
    static char junk[4096];
    memset(junk, 'x', sizeof junk);
    size_t filled = 0;
    for (;;) {
        ssize_t w = write(fd[1], junk, sizeof junk);
        if (w <= 0)
            break;
        filled += (size_t)w;
    }
    if (filled < sizeof junk) /* a pipe too small for whole pages: fill it byte by byte */
        while (write(fd[1], junk, 1) == 1)
            filled++;
    fcntl(fd[1], F_SETFL, 0);

    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], STDERR_FILENO);
        close(fd[1]);
        child(path);
    }
    close(fd[1]);
    /* let every thread fault while the first reporter waits on the pipe */
    struct timespec ts = {0, 500 * 1000 * 1000};
    nanosleep(&ts, NULL);
    size_t cap = filled + 65536, n = 0;
    char *buf = malloc(cap + 1);
    assert_non_null(buf);
    for (;;) {
        ssize_t r = read(fd[0], buf + n, cap - n);
        if (r <= 0)
            break;
        n += (size_t)r;
        if (n == cap)
            break;
    }
    close(fd[0]);
    buf[n] = 0;
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);

    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 1);
    assert_true(n >= filled);
    const char *msg = buf + filled;
    /* exactly one line: "tokscope: PATH: the model file ... (its byte N is gone); stopping" */
    char want_head[512];
    snprintf(want_head, sizeof want_head,
             "tokscope: %s: the model file was truncated or changed while in use (its byte ", path);
    static const char tail[] = " is gone); stopping\n";
    const size_t lh = strlen(want_head), lt = strlen(tail), lm = strlen(msg);
    if (lm < lh + lt + 1 || strncmp(msg, want_head, lh) != 0 || strcmp(msg + lm - lt, tail) != 0 ||
        strspn(msg + lh, "0123456789") != lm - lh - lt)
        fail_msg("want one message, got %zu bytes:\n%s", lm, msg);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_reporter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
