/* Replacing a file so that nothing is lost: the data goes to a temporary
 * file in the same directory, is fsync'd, renamed over the target, and the
 * directory is fsync'd. A kill -9, a crash or a full disk at any moment
 * leaves either the old file or the new one, each whole; on failure the
 * temporary file is removed and the old file is untouched. */
#ifndef TOKSCOPE_UI_ATOMIC_H
#define TOKSCOPE_UI_ATOMIC_H

#include <stdbool.h>
#include <stddef.h>

/* Writes data[0..len) to path. The temporary file is ".NAME.PID.tmp" next
 * to it; ones that a killed process left behind (its pid no longer exists)
 * are removed first. A new file gets mode 0666 & ~umask, a replaced file
 * keeps its mode. A symbolic link at path is replaced by the file. On
 * failure: false, "path: reason" in err and errno set. */
bool atomic_write_file(const char *path, const void *data, size_t len, char *err, size_t errlen);

/* Removes the temporary files of dir (of target base, or of any target when
 * base is NULL) whose process no longer exists. */
void atomic_remove_stale(const char *dir, const char *base);

/* Creates dir and its missing parents (mode 0700). False with errno set
 * when the last component cannot be created. */
bool atomic_mkdir_p(const char *dir);

#endif
