/* file.c - files the library keeps for the user: atomic replacement (write a
 * temporary file beside the target, fsync, rename, fsync the directory: a
 * crash leaves the old file or the new one, never a mix) and the XDG base
 * directories they live in. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"

/* mkdir -p, mode 0700 (the files are the user's own). */
static int make_dirs(char *dir)
{
    size_t len = strlen(dir);
    for (size_t i = 1; i <= len; i++) {
        if (dir[i] != '/' && dir[i] != '\0')
            continue;
        char c = dir[i];
        dir[i] = '\0';
        int bad = mkdir(dir, 0700) != 0 && errno != EEXIST;
        int err = errno;
        struct stat sb;
        if (!bad && (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))) {
            bad = 1;
            err = ENOTDIR;
        }
        if (bad) {
            int rc = synor__error(SYNOR_EIO, "%s: cannot create directory: %s", dir,
                                  strerror(err));
            dir[i] = c;
            return rc;
        }
        dir[i] = c;
    }
    return 0;
}

static int write_all(int fd, const char *s, size_t n)
{
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

int synor__write_file_atomic(const char *path, const char *data, size_t len)
{
    if (!path || !path[0])
        return synor__error(SYNOR_EINVAL, "no file path");
    size_t plen = strlen(path);
    char *dir = synor__malloc(plen + 2), *tmp = synor__malloc(plen + 16);
    int rc = 0, fd = -1;
    if (!dir || !tmp) {
        rc = synor__error(SYNOR_ENOMEM, "out of memory");
        goto out;
    }
    /* The directory part: "." without a slash, "/" for "/name". */
    const char *slash = strrchr(path, '/');
    if (!slash)
        memcpy(dir, ".", 2);
    else if (slash == path)
        memcpy(dir, "/", 2);
    else {
        memcpy(dir, path, (size_t)(slash - path));
        dir[slash - path] = '\0';
    }
    if ((rc = make_dirs(dir)))
        goto out;
    snprintf(tmp, plen + 16, "%s.tmp-XXXXXX", path);
    if ((fd = mkstemp(tmp)) < 0) {
        rc = synor__error(SYNOR_EIO, "%s: cannot create a temporary file: %s", tmp,
                          strerror(errno));
        goto out;
    }
    if (write_all(fd, data, len) != 0 || fsync(fd) != 0) {
        rc = synor__error(SYNOR_EIO, "%s: cannot write: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        goto out;
    }
    if (close(fd) != 0) {
        rc = synor__error(SYNOR_EIO, "%s: cannot write: %s", tmp, strerror(errno));
        unlink(tmp);
        goto out;
    }
    if (rename(tmp, path) != 0) {
        rc = synor__error(SYNOR_EIO, "%s: cannot rename %s over it: %s", path, tmp,
                          strerror(errno));
        unlink(tmp);
        goto out;
    }
    /* Make the rename itself durable. */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        if (fsync(dfd) != 0 && errno != EINVAL)
            rc = synor__error(SYNOR_EIO, "%s: fsync: %s", dir, strerror(errno));
        close(dfd);
    }
out:
    synor__free(dir);
    synor__free(tmp);
    return rc;
}

int synor__xdg_path(synor__xdg_dir which, const char *leaf, char *buf, size_t size)
{
    const char *env = which == SYNOR__XDG_CACHE ? "XDG_CACHE_HOME" : "XDG_DATA_HOME";
    const char *fallback = which == SYNOR__XDG_CACHE ? "/.cache/synor/" : "/.local/share/synor/";
    const char *xdg = getenv(env), *home = getenv("HOME");
    const char *base, *rest;
    /* The XDG base directory specification: a relative value is ignored. */
    if (xdg && xdg[0] == '/')
        base = xdg, rest = "/synor/";
    else if (home && home[0])
        base = home, rest = fallback;
    else
        return synor__error(SYNOR_ENOENT, "no %s directory: neither %s (absolute) nor HOME is set",
                            which == SYNOR__XDG_CACHE ? "cache" : "data", env);
    size_t need = strlen(base) + strlen(rest) + strlen(leaf) + 1;
    if (need > size) /* buf untouched */
        return synor__error(SYNOR_ERANGE, "the path of %s needs %zu bytes, %zu given", leaf,
                            need, size);
    snprintf(buf, size, "%s%s%s", base, rest, leaf);
    return 0;
}
