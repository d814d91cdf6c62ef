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
 * cmd_info) and exits with its return value. */
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

    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, stdin)) > 0) {
        if (line[len - 1] == '\n')
            line[--len] = '\0';
        char *args[MAX_ARGS + 2];
        int n = 0;
        args[n++] = "info";
        char *cut = strtok(line, "\t");
        for (char *a; n < MAX_ARGS && (a = strtok(NULL, "\t"));)
            args[n++] = a;
        args[n] = NULL;
        if (!cut || n < 2) {
            fprintf(stderr, "info_each: bad line (want CUT<TAB>ARGS...)\n");
            return 2;
        }
        if (strcmp(cut, "-") != 0) {
            if (cut_copy(args[n - 1], scratch, atoll(cut)) != 0) {
                fprintf(stderr, "info_each: cannot cut %s at %s\n", args[n - 1], cut);
                return 2;
            }
            args[n - 1] = (char *)scratch;
        }
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0) {
            perror("info_each: fork");
            return 2;
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
            int rc = cmd_info(n, args);
            exit(rc); /* flushes stdio and runs the leak check, as main's return */
        }
        int st;
        if (waitpid(pid, &st, 0) != pid) {
            perror("info_each: waitpid");
            return 2;
        }
        int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        struct stat so;
        printf("%d\t%lld\t", rc, stat(out_path, &so) == 0 ? (long long)so.st_size : -1LL);
        put_file(out_path, 1);
        putchar('\t');
        put_file(err_path, 0);
        putchar('\n');
    }
    free(line);
    unlink(out_path);
    unlink(err_path);
    return 0;
}
