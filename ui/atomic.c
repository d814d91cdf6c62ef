/* Atomic file replacement (temporary file, fsync, rename, fsync of the
 * directory). */
#include "atomic.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool atomic_mkdir_p(const char *dir)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s", dir) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return false;
    }
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(tmp, 0700); /* errors show at the last component */
            *p = '/';
        }
    if (mkdir(tmp, 0700) == 0 || errno == EEXIST) {
        struct stat sb;
        if (stat(tmp, &sb) == 0 && S_ISDIR(sb.st_mode))
            return true;
        errno = ENOTDIR;
    }
    return false;
}

/* Splits path into its directory ("." when none) and its last component. */
static void split_path(const char *path, char *dir, size_t dcap, const char **base)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(dir, dcap, ".");
        *base = path;
    } else if (slash == path) {
        snprintf(dir, dcap, "/");
        *base = slash + 1;
    } else {
        snprintf(dir, dcap, "%.*s", (int)(slash - path), path);
        *base = slash + 1;
    }
}

void atomic_remove_stale(const char *dir, const char *base)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    size_t bl = base ? strlen(base) : 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *n = de->d_name;
        size_t nl = strlen(n);
        if (n[0] != '.' || nl < 6 || strcmp(n + nl - 4, ".tmp") != 0)
            continue;
        /* ".BASE.PID.tmp": the pid sits between the last two dots */
        const char *dot = n + nl - 4;
        const char *p = dot;
        while (p > n + 1 && p[-1] >= '0' && p[-1] <= '9')
            p--;
        if (p == dot || p[-1] != '.' || p - 1 <= n + 1)
            continue;
        if (base && ((size_t)(p - 1 - (n + 1)) != bl || strncmp(n + 1, base, bl) != 0))
            continue;
        long pid = strtol(p, NULL, 10);
        if (pid > 0 && pid != (long)getpid() && kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
            char path[4096 + 512];
            snprintf(path, sizeof path, "%s/%s", dir, n);
            unlink(path);
        }
    }
    closedir(d);
}

static bool write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return false;
        }
        if (w == 0) {
            errno = EIO;
            return false;
        }
        p += w;
        n -= (size_t)w;
    }
    return true;
}

bool atomic_write_file(const char *path, const void *data, size_t len, char *err, size_t errlen)
{
    char dir[4096];
    const char *base;
    split_path(path, dir, sizeof dir, &base);
    if (!*base) {
        snprintf(err, errlen, "%s: not a file name", path);
        errno = EINVAL;
        return false;
    }
    atomic_remove_stale(dir, base);
    char tmp[4096 + 512];
    if (snprintf(tmp, sizeof tmp, "%s/.%s.%ld.tmp", dir, base, (long)getpid()) >= (int)sizeof tmp) {
        snprintf(err, errlen, "%s: %s", path, strerror(ENAMETOOLONG));
        errno = ENAMETOOLONG;
        return false;
    }
    struct stat old;
    bool had_old = stat(path, &old) == 0;
    if (had_old && S_ISDIR(old.st_mode)) {
        snprintf(err, errlen, "%s: %s", path, strerror(EISDIR));
        errno = EISDIR;
        return false;
    }
    unlink(tmp); /* our own, from an earlier failed attempt */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "%s: %s (cannot create a file in %s; %s)", path, strerror(e), dir,
                 had_old ? "the previous file is unchanged" : "nothing written");
        errno = e;
        return false;
    }
    bool ok = true;
    const char *step = "write";
    if (had_old && S_ISREG(old.st_mode))
        (void)fchmod(fd, old.st_mode & 07777);
    if (!write_all(fd, data, len))
        ok = false;
    else if (fsync(fd) != 0)
        ok = false, step = "fsync";
    int e = errno;
    if (close(fd) != 0 && ok) {
        ok = false, step = "close";
        e = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = false, step = "rename";
        e = errno;
    }
    if (!ok) {
        unlink(tmp);
        snprintf(err, errlen, "%s: %s (%s; %s)", path, strerror(e), step,
                 had_old ? "the previous file is unchanged" : "nothing written");
        errno = e;
        return false;
    }
    /* the rename itself must reach the disk; some filesystems cannot sync a
     * directory (EINVAL): the data is safe there anyway */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
    return true;
}
