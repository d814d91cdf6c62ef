/* Runs `tokscope info` on many files, one forked child each, for
 * tests/golden/info.sh: a fresh process per file (its exit status, a
 * signal, a sanitizer's exit code and leak check are the child's own) without
 * a fresh exec per file, which costs ~40 ms of dynamic linking (~45 shared
 * libraries) and far more under ASan; the corpus and the truncated copies are
 * ~2,700 runs.
 *
 *   info_each SCRATCH <LIST
 *
 * LIST: one run per line, tab-separated: CUT, then info's arguments. CUT "-"
 * runs them as they are; CUT N first writes the first N bytes of the last
 * argument to SCRATCH and runs info on SCRATCH instead.
 * Output: one line per run, tab-separated: the exit status (128 + N when
 * killed by signal N), the bytes written to stdout, stdout's first line, and
 * stderr; newlines in stderr are written as "\n", tabs in both as spaces.
 * The child runs what main() runs for `tokscope info` (signals_install,
 * cmd_info) and exits with its return value. Exit status 2: a bad line, or
 * (ASan build) a leak-checked rerun that ended otherwise than its first run
 * (a leak: the sanitizer's exit code); stderr then names it, and always says
 * how many distinct outcomes were leak-checked. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../app/commands.h" /* not ui/commands.h */
#include "../../app/signals.h"

#define MAX_ARGS 16

/* cut_copy: SCRATCH holds the first n bytes of src */
static int cut_copy(const char *src, const char *scratch, long long n)
{
    int in = open(src, O_RDONLY);
    if (in < 0)
        return -1;
    int out = open(scratch, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0) {
        close(in);
        return -1;
    }
    char buf[1 << 16];
    long long left = n;
    while (left > 0) {
        ssize_t r = read(in, buf, left < (long long)sizeof buf ? (size_t)left : sizeof buf);
        if (r <= 0 || write(out, buf, (size_t)r) != r)
            break;
        left -= r;
    }
    close(in);
    close(out);
    return left == 0 ? 0 : -1;
}

/* put_file: FILE's text on one line (its first line only when first_line) */
static void put_file(const char *path, int first_line)
{
    FILE *f = fopen(path, "rb");
    int c;
    if (!f)
        return;
    while ((c = getc(f)) != EOF) {
        if (first_line) {
            if (c == '\n')
                break;
            putchar(c == '\t' ? ' ' : c);
        } else if (c == '\n') {
            fputs("\\n", stdout);
        } else {
            putchar(c == '\t' ? ' ' : c);
        }
    }
    fclose(f);
}

/* Under ASan (LeakSanitizer), the leak check at a child's exit is ~30 ms of
 * stopping and scanning the process, three quarters of this tool's time over
 * ~2,700 runs. Most runs take a path an earlier one took (the same error, cut
 * at another byte), so the children exit without it (_exit skips the
 * sanitizer's atexit check) and every distinct outcome (exit status and
 * stderr with its numbers left out) runs once more at the end with the
 * check: each error path and each valid file is still leak-checked once. */
#if defined(__SANITIZE_ADDRESS__)
#define LEAK_CHECK_DISTINCT 1
#else
#define LEAK_CHECK_DISTINCT 0
#endif

/* INFO_EACH_PLANT_LEAK set: each child loses 24 bytes, for tests/golden/
 * info.sh to see that the leak-checked runs still find a leak */
static void *volatile planted;
static void plant_leak(void)
{
    if (!getenv("INFO_EACH_PLANT_LEAK"))
        return;
    planted = malloc(24);
    planted = NULL;
}

/* run_one: runs LINE (CUT <TAB> ARGS..., modified in place) in a forked
 * child with its stdout and stderr in OUT and ERR; the child's exit status
 * (128 + N when killed by signal N), or -1 with a message on a bad line. */
static int run_one(char *line, const char *scratch, const char *out_path, const char *err_path, int leak_check)
{
    char *args[MAX_ARGS + 2];
    int n = 0;
    args[n++] = "info";
    char *cut = strtok(line, "\t");
    for (char *a; n < MAX_ARGS && (a = strtok(NULL, "\t"));)
        args[n++] = a;
    args[n] = NULL;
    if (!cut || n < 2) {
        fprintf(stderr, "info_each: bad line (want CUT<TAB>ARGS...)\n");
        return -1;
    }
    if (strcmp(cut, "-") != 0) {
        if (cut_copy(args[n - 1], scratch, atoll(cut)) != 0) {
            fprintf(stderr, "info_each: cannot cut %s at %s\n", args[n - 1], cut);
            return -1;
        }
        args[n - 1] = (char *)scratch;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("info_each: fork");
        return -1;
    }
    if (pid == 0) {
        /* stdin off the list: exit() sets a seekable input's offset back
         * to its stream position, and the parent shares that offset */
        int null = open("/dev/null", O_RDONLY);
        if (null < 0 || dup2(null, 0) < 0 || !freopen(out_path, "w", stdout) || !freopen(err_path, "w", stderr))
            _exit(125);
        if (null != 0)
            close(null);
        signals_install();
        plant_leak();
        int rc = cmd_info(n, args);
        if (!leak_check) {
            fflush(NULL);
            _exit(rc);
        }
        exit(rc); /* flushes stdio and runs the leak check, as main's return */
    }
    int st;
    if (waitpid(pid, &st, 0) != pid) {
        perror("info_each: waitpid");
        return -1;
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* outcome_key: "RC:" and ERR's text without digits (offsets and sizes differ
 * between cuts of one path), at most 240 bytes; malloc'd */
static char *outcome_key(int rc, const char *err_path)
{
    char *k = malloc(256);
    if (!k)
        return NULL;
    int n = snprintf(k, 256, "%d:", rc);
    FILE *f = fopen(err_path, "rb");
    for (int c; f && n < 240 && (c = getc(f)) != EOF;)
        if (c < '0' || c > '9')
            k[n++] = (char)c;
    k[n] = '\0';
    if (f)
        fclose(f);
    return k;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: info_each SCRATCH <LIST\n");
        return 2;
    }
    const char *scratch = argv[1];
    char out_path[4096], err_path[4096];
    snprintf(out_path, sizeof out_path, "%s.out", scratch);
    snprintf(err_path, sizeof err_path, "%s.err", scratch);

    /* the first run of each distinct outcome */
    struct outcome {
        char *line, *key;
        int rc;
    } *again = NULL;
    int n_again = 0, cap_again = 0, status = 0;

    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, stdin)) > 0) {
        if (line[len - 1] == '\n')
            line[--len] = '\0';
        char *copy = LEAK_CHECK_DISTINCT ? strdup(line) : NULL;
        int rc = run_one(line, scratch, out_path, err_path, !LEAK_CHECK_DISTINCT);
        if (rc < 0) {
            free(copy);
            status = 2;
            break;
        }
        struct stat so;
        printf("%d\t%lld\t", rc, stat(out_path, &so) == 0 ? (long long)so.st_size : -1LL);
        put_file(out_path, 1);
        putchar('\t');
        put_file(err_path, 0);
        putchar('\n');
        char *key = copy ? outcome_key(rc, err_path) : NULL;
        int seen = !key;
        for (int i = 0; key && i < n_again && !seen; i++)
            seen = strcmp(again[i].key, key) == 0;
        if (!seen && n_again == cap_again) {
            cap_again = cap_again ? 2 * cap_again : 64;
            if (!(again = realloc(again, (size_t)cap_again * sizeof *again))) {
                fprintf(stderr, "info_each: out of memory\n");
                return 2;
            }
        }
        if (!seen) {
            again[n_again++] = (struct outcome){copy, key, rc};
        } else {
            free(copy);
            free(key);
        }
    }
    free(line);
    fflush(stdout);
    /* the leak-checked runs: a leak is the sanitizer's report file and its
     * exit code (which tests/run.sh both count); a changed status is named */
    for (int i = 0; i < n_again; i++) {
        char *l = strdup(again[i].line); /* run_one cuts its line up */
        int rc = l ? run_one(l, scratch, out_path, err_path, 1) : -1;
        if (rc != again[i].rc) {
            fprintf(stderr, "info_each: leak-checked run of '%s' exited %d, its first run %d\n", again[i].line, rc,
                    again[i].rc);
            status = 2;
        }
        free(l);
        free(again[i].line);
        free(again[i].key);
    }
    if (LEAK_CHECK_DISTINCT)
        fprintf(stderr, "info_each: %d distinct outcomes leak-checked\n", n_again);
    free(again);
    unlink(out_path);
    unlink(err_path);
    return status;
}
