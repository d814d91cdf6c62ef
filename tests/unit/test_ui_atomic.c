/* Atomic file replacement and UTF-8 repair: what /save, /export and the
 * autosave rely on so that nothing written is ever half a file. Failures are
 * made real, in a child process: a directory without write permission (with
 * the capability that lets root ignore it dropped), and a file size limit
 * (RLIMIT_FSIZE) for a write that stops half way, as a full disk does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "atomic.h"
#include "testutil.h"
#include "utf8.h"

static char g_dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "%s/tokscope-atomic-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "chmod -R u+w '%s' && rm -rf '%s'", g_dir, g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return buf;
}

/* Files of g_dir whose name starts with '.', i.e. temporary files. */
static int count_temps(void)
{
    DIR *d = opendir(g_dir);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)))
        n += de->d_name[0] == '.' && strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
    if (d)
        closedir(d);
    return n;
}

/* Drops the capabilities that let root write where permissions forbid it
 * (a no-op for other users, who never had them). */
static void drop_dac_caps(void)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    if (syscall(SYS_capget, &h, d) != 0)
        return;
    unsigned drop = (1u << CAP_DAC_OVERRIDE) | (1u << CAP_DAC_READ_SEARCH) | (1u << CAP_FOWNER);
    d[0].effective &= ~drop;
    d[0].permitted &= ~drop;
    (void)syscall(SYS_capset, &h, d);
}

static void test_write_replace_keep_mode(void **state)
{
    (void)state;
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/conv.json", g_dir);
    assert_true(atomic_write_file(path, "first", 5, err, sizeof err));
    assert_string_equal(slurp(path), "first");
    chmod(path, 0640);
    assert_true(atomic_write_file(path, "second, longer", 14, err, sizeof err));
    assert_string_equal(slurp(path), "second, longer");
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0640); /* a replaced file keeps its mode */
    assert_int_equal(count_temps(), 0);
    /* a directory is not replaced */
    assert_false(atomic_write_file(g_dir, "x", 1, err, sizeof err));
    /* a relative name writes in the current directory */
    char cwd[512];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(g_dir), 0);
    assert_true(atomic_write_file("rel.json", "r", 1, err, sizeof err));
    assert_int_equal(chdir(cwd), 0);
    snprintf(path, sizeof path, "%s/rel.json", g_dir);
    assert_string_equal(slurp(path), "r");
}

static void test_stale_temps(void **state)
{
    (void)state;
    /* a pid that surely no longer runs: a child that has exited */
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    waitpid(dead, NULL, 0);
    char stale[512], alive[512], other[512], path[512], err[256];
    snprintf(stale, sizeof stale, "%s/.conv.json.%d.tmp", g_dir, (int)dead);
    snprintf(alive, sizeof alive, "%s/.conv.json.%d.tmp", g_dir, (int)getppid());
    snprintf(other, sizeof other, "%s/.notes.json.%d.tmp", g_dir, (int)dead);
    FILE *f;
    assert_non_null(f = fopen(stale, "w"));
    fclose(f);
    assert_non_null(f = fopen(alive, "w"));
    fclose(f);
    assert_non_null(f = fopen(other, "w"));
    fclose(f);
    snprintf(path, sizeof path, "%s/conv.json", g_dir);
    assert_true(atomic_write_file(path, "{}", 2, err, sizeof err));
    assert_int_equal(access(stale, F_OK), -1); /* its writer is gone */
    assert_int_equal(access(alive, F_OK), 0);  /* another live process's */
    assert_int_equal(access(other, F_OK), 0);  /* another file's */
    atomic_remove_stale(g_dir, NULL);          /* any target */
    assert_int_equal(access(other, F_OK), -1);
    assert_int_equal(access(alive, F_OK), 0);
    unlink(alive);
}

/* In a child: a read-only directory refuses the save, the old file stays. */
static void test_read_only_dir(void **state)
{
    (void)state;
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/conv.json", g_dir);
    assert_true(atomic_write_file(path, "old", 3, err, sizeof err));
    assert_int_equal(chmod(g_dir, 0555), 0);
    pid_t pid = fork();
    if (pid == 0) {
        drop_dac_caps();
        char e[256] = "";
        bool ok = atomic_write_file(path, "new", 3, e, sizeof e);
        /* the reason and the reassurance are both in the message */
        _exit(!ok && strstr(e, "Permission denied") && strstr(e, "previous file is unchanged") ? 0 : 1);
    }
    int st;
    waitpid(pid, &st, 0);
    chmod(g_dir, 0755);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_string_equal(slurp(path), "old");
    assert_int_equal(count_temps(), 0);
}

/* In a child: a write that stops half way (RLIMIT_FSIZE, as a full disk
 * would) leaves the old file whole and no temporary file. */
static void test_write_fails_half_way(void **state)
{
    (void)state;
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/conv.json", g_dir);
    assert_true(atomic_write_file(path, "old content", 11, err, sizeof err));
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {4096, 4096};
        setrlimit(RLIMIT_FSIZE, &rl);
        static char big[100000];
        memset(big, 'x', sizeof big);
        char e[256] = "";
        bool ok = atomic_write_file(path, big, sizeof big, e, sizeof e);
        _exit(!ok && strstr(e, "previous file is unchanged") ? 0 : 1);
    }
    int st;
    waitpid(pid, &st, 0);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_string_equal(slurp(path), "old content");
    assert_int_equal(count_temps(), 0);
}

static void test_mkdir_p(void **state)
{
    (void)state;
    char p[512];
    snprintf(p, sizeof p, "%s/a/b/c", g_dir);
    assert_true(atomic_mkdir_p(p));
    assert_true(atomic_mkdir_p(p)); /* exists: fine */
    char f[512], err[256];
    snprintf(f, sizeof f, "%s/file", g_dir);
    assert_true(atomic_write_file(f, "x", 1, err, sizeof err));
    assert_false(atomic_mkdir_p(f)); /* a file in the way */
}

static void test_utf8(void **state)
{
    (void)state;
    assert_true(utf8_valid("plain", 5));
    assert_true(utf8_valid("\xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80", 9)); /* é 日 😀 */
    assert_true(utf8_valid("\xef\xbf\xbd", 3));                         /* U+FFFD itself */
    assert_false(utf8_valid("\xff", 1));
    assert_false(utf8_valid("\xc3", 1));             /* truncated */
    assert_false(utf8_valid("\xc0\xaf", 2));         /* overlong '/' */
    assert_false(utf8_valid("\xed\xa0\x80", 3));     /* a surrogate */
    assert_false(utf8_valid("\xf4\x90\x80\x80", 4)); /* above U+10FFFF */
    size_t n;
    char *s = utf8_sanitize("ab\xff\xfe"
                            "cd\xc3",
                            7, &n);
    assert_string_equal(s, "ab\xef\xbf\xbd\xef\xbf\xbd"
                           "cd\xef\xbf\xbd");
    assert_int_equal(n, strlen(s));
    assert_true(utf8_valid(s, n));
    free(s);
    /* a truncated sequence before a valid character: that character survives */
    s = utf8_sanitize("\xe6\x97"
                      "a\xc3\xa9",
                      5, NULL);
    assert_string_equal(s, "\xef\xbf\xbd\xef\xbf\xbd"
                           "a\xc3\xa9");
    free(s);
    s = utf8_sanitize("", 0, &n);
    assert_string_equal(s, "");
    assert_int_equal(n, 0);
    free(s);
    /* random bytes always come out valid, and valid text unchanged */
    uint64_t rs = 0x5eed;
    for (int k = 0; k < 2000; k++) {
        char in[64];
        size_t len = test_xorshift64(&rs) % sizeof in;
        for (size_t i = 0; i < len; i++)
            in[i] = (char)(test_xorshift64(&rs) & 0xff);
        char *out = utf8_sanitize(in, len, &n);
        assert_true(utf8_valid(out, n));
        if (utf8_valid(in, len)) {
            assert_int_equal(n, len);
            assert_memory_equal(out, in, len);
        }
        free(out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_write_replace_keep_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_temps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_only_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_fails_half_way, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mkdir_p, setup, teardown),
        cmocka_unit_test(test_utf8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
