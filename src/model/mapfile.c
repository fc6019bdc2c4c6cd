/* mapfile.c - model files in and out: a whole file mapped read-only, and a
 * file streamed into a temporary and renamed into place (weights are too
 * large to build in memory first, so synor__write_file_atomic's
 * whole-buffer form does not fit; the durability steps are the same). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/model_internal.h"

int synor__map_file(const char *path, synor__mapping *m)
{
    m->data = NULL;
    m->size = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return synor__error(SYNOR_EIO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int rc = synor__error(SYNOR_EIO, "%s: cannot stat: %s", path, strerror(errno));
        close(fd);
        return rc;
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return synor__error(SYNOR_EIO, "%s: not a regular file", path);
    }
    if ((uint64_t)sb.st_size > (uint64_t)SIZE_MAX) {
        close(fd);
        return synor__error(SYNOR_EIO, "%s: too large to map (%lld bytes)", path,
                            (long long)sb.st_size);
    }
    if (sb.st_size > 0) {
        void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int rc = synor__error(SYNOR_EIO, "%s: cannot map: %s", path, strerror(errno));
            close(fd);
            return rc;
        }
        m->data = p;
        m->size = (size_t)sb.st_size;
    }
    close(fd); /* the mapping keeps the file */
    return 0;
}

void synor__unmap_file(synor__mapping *m)
{
    if (m->data)
        munmap((void *)(uintptr_t)m->data, m->size);
    m->data = NULL;
    m->size = 0;
}

int synor__map_populate(const synor__mapping *m, const char *path)
{
    if (!m->data)
        return 0;
#ifdef MADV_POPULATE_READ
    if (madvise((void *)(uintptr_t)m->data, m->size, MADV_POPULATE_READ) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return synor__error(SYNOR_EIO, "%s: cannot map its pages: %s", path, strerror(errno));
#endif
    return synor__error(SYNOR_ENOTSUP, "%s: this system cannot map a file's pages ahead", path);
}

int synor__map_drop(const synor__mapping *m, const char *path, const void *p, size_t n)
{
    uintptr_t lo = (uintptr_t)m->data, hi = lo + m->size, a = (uintptr_t)p;
    if (!m->data || a < lo || a > hi || n > hi - a)
        return synor__error(SYNOR_EINVAL, "%s: a range of %zu bytes outside its mapping", path, n);
    long ps = sysconf(_SC_PAGESIZE);
    uintptr_t page = ps > 0 ? (uintptr_t)ps : 4096;
    uintptr_t s = (a + page - 1) & ~(page - 1), e = (a + n) & ~(page - 1);
    /* a private read-only mapping of a file: its dropped pages are the
     * file's again at the next touch (never zeros, as anonymous memory's) */
    if (e > s && madvise((void *)s, e - s, MADV_DONTNEED) != 0)
        return synor__error(SYNOR_EIO, "%s: cannot drop its pages: %s", path, strerror(errno));
    return 0;
}

int synor__afile_open(synor__afile *f, const char *path)
{
    memset(f, 0, sizeof *f);
    f->fd = -1;
    if (!path || !path[0])
        return synor__error(SYNOR_EINVAL, "no file path");
    size_t plen = strlen(path);
    f->path = synor__strdup(path);
    f->tmp = synor__malloc(plen + 16);
    f->buf = synor__malloc(SYNOR__AFILE_BUF);
    if (!f->path || !f->tmp || !f->buf) {
        synor__afile_abort(f);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    snprintf(f->tmp, plen + 16, "%s.tmp-XXXXXX", path);
    f->fd = mkstemp(f->tmp);
    if (f->fd < 0) {
        int rc = synor__error(SYNOR_EIO, "%s: cannot create a temporary file: %s", f->tmp,
                              strerror(errno));
        synor__free(f->tmp);
        f->tmp = NULL; /* nothing to unlink */
        synor__afile_abort(f);
        return rc;
    }
    /* mkstemp's 0600 would make a model file private to its writer; model
     * files are shared like the files other tools write */
    if (fchmod(f->fd, 0644) != 0) {
        f->failed = 1;
        f->err = errno;
    }
    return 0;
}

static void flush(synor__afile *f)
{
    const unsigned char *p = f->buf;
    size_t n = f->len;
    while (n && !f->failed) {
        ssize_t w = write(f->fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            f->failed = 1;
            f->err = w < 0 ? errno : ENOSPC;
            break;
        }
        p += w;
        n -= (size_t)w;
    }
    f->len = 0;
}

void synor__afile_write(synor__afile *f, const void *p, size_t n)
{
    const unsigned char *s = p;
    f->written += n;
    while (n && !f->failed) {
        size_t room = SYNOR__AFILE_BUF - f->len, k = n < room ? n : room;
        memcpy(f->buf + f->len, s, k);
        f->len += k;
        s += k;
        n -= k;
        if (f->len == SYNOR__AFILE_BUF)
            flush(f);
    }
}

void synor__afile_zeros(synor__afile *f, size_t n)
{
    static const unsigned char zero[64];
    while (n) {
        size_t k = n < sizeof zero ? n : sizeof zero;
        synor__afile_write(f, zero, k);
        n -= k;
    }
}

int synor__afile_commit(synor__afile *f)
{
    flush(f);
    if (!f->failed && fsync(f->fd) != 0) {
        f->failed = 1;
        f->err = errno;
    }
    if (f->failed) {
        int rc = synor__error(SYNOR_EIO, "%s: cannot write: %s", f->tmp, strerror(f->err));
        synor__afile_abort(f);
        return rc;
    }
    int fd = f->fd;
    f->fd = -1;
    if (close(fd) != 0) {
        int rc = synor__error(SYNOR_EIO, "%s: cannot write: %s", f->tmp, strerror(errno));
        synor__afile_abort(f);
        return rc;
    }
    if (rename(f->tmp, f->path) != 0) {
        int rc = synor__error(SYNOR_EIO, "%s: cannot rename %s over it: %s", f->path, f->tmp,
                              strerror(errno));
        synor__afile_abort(f);
        return rc;
    }
    synor__free(f->tmp);
    f->tmp = NULL;
    /* The rename itself made durable: fsync of the directory. */
    int rc = 0;
    char *slash = strrchr(f->path, '/');
    const char *dir = ".";
    if (slash == f->path)
        dir = "/";
    else if (slash) {
        *slash = '\0';
        dir = f->path;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        if (fsync(dfd) != 0 && errno != EINVAL)
            rc = synor__error(SYNOR_EIO, "%s: fsync: %s", dir, strerror(errno));
        close(dfd);
    }
    synor__afile_abort(f);
    return rc;
}

void synor__afile_abort(synor__afile *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    if (f->tmp)
        unlink(f->tmp);
    synor__free(f->tmp);
    synor__free(f->path);
    synor__free(f->buf);
    f->tmp = f->path = NULL;
    f->buf = NULL;
}

void synor__printable(const char *s, size_t len, char *buf, size_t n)
{
    size_t keep = len < n ? len : n - 1, i;
    int cut = len > n - 1;
    if (cut && n > 4)
        keep = n - 4;
    for (i = 0; i < keep; i++) {
        unsigned char c = (unsigned char)s[i];
        buf[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    if (cut && n > 4) {
        memcpy(buf + i, "...", 3);
        i += 3;
    }
    buf[i] = '\0';
}
