/* journal.c - durability of the market: a write-ahead journal of commands
 * and registrations, snapshots, and recovery.
 *
 * Files in the market directory:
 *   journal.log   "SYNJRNL1", then records: u32 body length, u32 CRC-32C of
 *                 the body, body = u8 type, u64 seq, payload (little endian)
 *   snapshot.bin  "SYNSNAP3", u64 body length, u32 CRC-32C, body = the
 *                 canonical state (snapshot.c)
 *
 * Write path: records are encoded into a buffer before the command is
 * applied; synor_market_commit() writes the buffer and, by policy, fsyncs.
 * Only after that are the batch's events acknowledged, so an acknowledged
 * command is always in the file.
 *
 * Recovery: load the snapshot (if any, CRC checked), replay journal records
 * whose seq is above the snapshot's. The first record that is incomplete or
 * fails its CRC ends the replay: it and anything after it are cut off (a
 * torn write at a crash), never half-applied, and the note says so. A
 * damaged record with valid records after it is not a torn write - the
 * writer only appends - but corruption: open fails rather than dropping
 * acknowledged commands, unless the configuration asks to salvage.
 * Snapshots are also taken automatically at a commit once the journal holds
 * cfg.snapshot_every records, which bounds recovery time.
 * Snapshots are written to a temporary file, fsynced and renamed; the journal
 * is then truncated to its header. A crash between the two only leaves
 * records the replay skips. */
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "market/market_internal.h"

/* 2 (issue 10): only applied commands are journaled, and the rules of
 * self-trade prevention and of ids changed; a journal of version 1 is
 * replayed by its own rules (m->legacy), then upgraded */
#define JOURNAL_MAGIC "SYNJRNL2"
#define JOURNAL_MAGIC_V1 "SYNJRNL1"
#define MAX_RECORD (1u << 20)
#define MAX_PAYLOAD 128 /* the largest record written: a command, or a name */

struct mjournal {
    int fd;
    _Atomic int sync_failed; /* set by synor__journal_sync, which may run on
                                another thread (synor_market_commit_sync) */
    pthread_mutex_t sync_lock; /* a flush, or a snapshot's rewrite of the
                                  files, one at a time */
    uint64_t records; /* records in the journal file (or pending) */
    synor__buf pending;
    char path[4096];
    char snap[4096];
};

/* ---------------------------------------------------------- encoding */

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}
static uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

#define CMD_PAYLOAD 80
/* A bid with a region set: the 80 bytes, then n_also and 3 resources. The
 * plain form stays 80 bytes, so journals without such bids are unchanged. */
#define CMD_PAYLOAD_ALSO 96
/* A command other than a place with a ref (its own id): 8 more bytes at the
 * end, 88 or 104; commands without one keep their sizes. */
#define CMD_REF 8

/* A command's payload; returns its length. */
static size_t encode_cmd(unsigned char *p, const synor_market_cmd *c)
{
    p[0] = (unsigned char)c->kind;
    p[1] = (unsigned char)c->side;
    p[2] = (unsigned char)c->type;
    p[3] = (unsigned char)c->tif;
    p[4] = c->interruptible;
    p[5] = c->priority;
    p[6] = c->min_reputation;
    p[7] = c->reputation;
    put64(p + 8, c->time);
    put64(p + 16, c->order_id);
    put32(p + 24, c->owner);
    put32(p + 28, c->resource);
    put64(p + 32, (uint64_t)c->price);
    put64(p + 40, (uint64_t)c->qty);
    put64(p + 48, c->expires);
    put64(p + 56, c->duration);
    put64(p + 64, c->zones);
    put64(p + 72, c->zone);
    size_t n = CMD_PAYLOAD;
    if (c->n_also) {
        memset(p + 80, 0, CMD_PAYLOAD_ALSO - 80);
        p[80] = c->n_also;
        for (unsigned k = 0; k < 3; k++)
            put32(p + 84 + 4 * k, c->also[k]);
        n = CMD_PAYLOAD_ALSO;
    }
    if (c->ref && c->kind != SYNOR_CMD_PLACE) { /* a place's ref is its order id */
        put64(p + n, c->ref);
        n += CMD_REF;
    }
    return n;
}

static int cmd_size(size_t n)
{
    return n == CMD_PAYLOAD || n == CMD_PAYLOAD_ALSO || n == CMD_PAYLOAD + CMD_REF ||
           n == CMD_PAYLOAD_ALSO + CMD_REF;
}

static void decode_cmd(const unsigned char *p, size_t n, synor_market_cmd *c)
{
    memset(c, 0, sizeof *c);
    c->kind = (synor_market_cmd_kind)p[0];
    c->side = (synor_side)p[1];
    c->type = (synor_order_type)p[2];
    c->tif = (synor_tif)p[3];
    c->interruptible = p[4];
    c->priority = p[5];
    c->min_reputation = p[6];
    c->reputation = p[7];
    c->time = get64(p + 8);
    c->order_id = get64(p + 16);
    c->owner = get32(p + 24);
    c->resource = get32(p + 28);
    c->price = (int64_t)get64(p + 32);
    c->qty = (int64_t)get64(p + 40);
    c->expires = get64(p + 48);
    c->duration = get64(p + 56);
    c->zones = get64(p + 64);
    c->zone = (uint8_t)get64(p + 72);
    if (n >= CMD_PAYLOAD_ALSO) {
        c->n_also = p[80];
        for (unsigned k = 0; k < 3; k++)
            c->also[k] = get32(p + 84 + 4 * k);
    }
    if (n == CMD_PAYLOAD + CMD_REF || n == CMD_PAYLOAD_ALSO + CMD_REF)
        c->ref = get64(p + n - CMD_REF);
}

/* Appends one whole record to the batch, or nothing (out of memory). */
static int append_record(mjournal *j, int type, uint64_t seq, const void *payload, size_t n)
{
    unsigned char rec[17 + MAX_PAYLOAD];
    if (n > MAX_PAYLOAD)
        return synor__error(SYNOR_EINVAL, "market journal: a record of %zu bytes", n);
    put32(rec, (uint32_t)(9 + n));
    rec[8] = (unsigned char)type;
    put64(rec + 9, seq);
    memcpy(rec + 17, payload, n);
    put32(rec + 4, synor__crc32c(0, rec + 8, 9 + n));
    synor__buf_append(&j->pending, (const char *)rec, 17 + n);
    if (j->pending.failed) {
        j->pending.failed = 0; /* the append added nothing: the batch is whole */
        return synor__error(SYNOR_ENOMEM, "market journal: out of memory");
    }
    j->records++;
    return 0;
}

int synor__journal_cmd(synor_market *m, const synor_market_cmd *c)
{
    unsigned char p[CMD_PAYLOAD_ALSO + CMD_REF];
    size_t n = encode_cmd(p, c);
    return append_record(m->journal, SYNOR__REC_CMD, m->seq + 1, p, n);
}

int synor__journal_group_begin(synor_market *m, size_t *at)
{
    unsigned char len[8] = {0};
    *at = m->journal->pending.len;
    return append_record(m->journal, SYNOR__REC_GROUP, m->seq + 1, len, sizeof len);
}

/* The header at `at` gets the length of what follows it in the batch. */
void synor__journal_group_end(synor_market *m, size_t at)
{
    unsigned char *rec = (unsigned char *)m->journal->pending.data + at;
    put64(rec + 17, (uint64_t)(m->journal->pending.len - at - 25));
    put32(rec + 4, synor__crc32c(0, rec + 8, 17));
}

synor__jmark synor__journal_mark(const synor_market *m)
{
    synor__jmark k = {0, 0};
    if (m->journal) {
        k.len = m->journal->pending.len;
        k.records = m->journal->records;
    }
    return k;
}

void synor__journal_rewind(synor_market *m, synor__jmark k)
{
    if (m->journal && m->journal->pending.len >= k.len) {
        m->journal->pending.len = k.len;
        m->journal->records = k.records;
    }
}

int synor__journal_name_at(synor_market *m, int type, const char *name, uint64_t seq)
{
    if (!m->journal)
        return 0;
    if (m->read_only)
        return synor__error(SYNOR_ESTATE, "market: opened read-only");
    return append_record(m->journal, type, seq, name, strlen(name));
}

static int write_all(int fd, const char *p, size_t n, const char *path)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return synor__error(SYNOR_EIO, "%s: write failed: %s", path, strerror(errno));
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int synor__journal_write(synor_market *m)
{
    mjournal *j = m->journal;
    if (!j)
        return 0;
    if (atomic_load(&j->sync_failed))
        return synor__error(SYNOR_EIO, "%s: an earlier fdatasync failed", j->path);
    if (j->pending.len == 0)
        return 0;
    int rc = write_all(j->fd, j->pending.data, j->pending.len, j->path);
    if (rc)
        return rc;
    j->pending.len = 0;
    return 0;
}

/* The flush itself; the caller holds sync_lock. */
static int sync_locked(const synor_market *m)
{
    mjournal *j = m->journal;
    if (m->cfg.fsync == SYNOR_FSYNC_NEVER)
        return 0;
    if (fdatasync(j->fd) != 0) {
        atomic_store(&j->sync_failed, 1);
        return synor__error(SYNOR_EIO, "%s: fdatasync failed: %s", j->path, strerror(errno));
    }
    return 0;
}

/* Touches only the file descriptor and the flag, under sync_lock: it may
 * run on another thread while commands are submitted and written, and
 * while a snapshot is taken (never with a close: synor_market_commit_sync's
 * contract). A write that runs beside it may or may not be covered by it;
 * everything written before it began is. */
int synor__journal_sync(const synor_market *m)
{
    mjournal *j = m->journal;
    if (!j)
        return 0;
    pthread_mutex_lock(&j->sync_lock);
    int rc = sync_locked(m);
    pthread_mutex_unlock(&j->sync_lock);
    return rc;
}

int synor__journal_commit(synor_market *m)
{
    int rc = synor__journal_write(m);
    return rc ? rc : synor__journal_sync(m);
}

/* ---------------------------------------------------------- snapshot */

static int fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return synor__error(SYNOR_EIO, "%s: cannot open directory: %s", dir, strerror(errno));
    int rc = fsync(fd);
    close(fd);
    return rc ? synor__error(SYNOR_EIO, "%s: fsync failed: %s", dir, strerror(errno)) : 0;
}

static int snapshot_locked(synor_market *m);

/* Under sync_lock, so that no flush runs on another thread while the
 * journal is cut. */
int synor__journal_snapshot(synor_market *m)
{
    mjournal *j = m->journal;
    int rc = synor__journal_write(m);
    if (rc)
        return rc;
    pthread_mutex_lock(&j->sync_lock);
    rc = sync_locked(m);
    if (!rc)
        rc = snapshot_locked(m);
    pthread_mutex_unlock(&j->sync_lock);
    return rc;
}

static int snapshot_locked(synor_market *m)
{
    mjournal *j = m->journal;
    int rc;
    synor__buf body;
    synor__buf_init(&body);
    if ((rc = synor__snapshot_build(m, &body))) {
        synor__buf_free(&body);
        return rc;
    }
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", j->snap);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        synor__buf_free(&body);
        return synor__error(SYNOR_EIO, "%s: cannot create: %s", tmp, strerror(errno));
    }
    rc = write_all(fd, body.data, body.len, tmp);
    if (!rc && fsync(fd) != 0)
        rc = synor__error(SYNOR_EIO, "%s: fsync failed: %s", tmp, strerror(errno));
    close(fd);
    synor__buf_free(&body);
    if (!rc && rename(tmp, j->snap) != 0)
        rc = synor__error(SYNOR_EIO, "%s: rename failed: %s", j->snap, strerror(errno));
    if (!rc)
        rc = fsync_dir(m->dir);
    if (rc)
        return rc;
    /* everything in the journal is now in the snapshot */
    if (ftruncate(j->fd, 8) != 0 || lseek(j->fd, 0, SEEK_END) < 0 || fdatasync(j->fd) != 0)
        return synor__error(SYNOR_EIO, "%s: truncate after snapshot failed: %s", j->path,
                            strerror(errno));
    j->records = 0;
    return 0;
}

int synor__journal_maybe_snapshot(synor_market *m)
{
    mjournal *j = m->journal;
    if (!j || !m->cfg.snapshot_every || j->records < m->cfg.snapshot_every)
        return 0;
    return synor__journal_snapshot(m);
}

/* The offset of the first intact record at or after `from` with a seq
 * above min_seq, or 0. Record sizes are known (a command, or a name of
 * 1..63 bytes), so a candidate costs a CRC of at most 113 bytes. */
static size_t intact_after(const unsigned char *p, size_t len, size_t from, uint64_t min_seq)
{
    for (size_t pos = from; pos + 17 <= len; pos++) {
        uint32_t n = get32(p + pos);
        if (!((n >= 10 && n <= 72) || cmd_size(n - 9)) ||
            len - pos - 8 < n)
            continue;
        const unsigned char *body = p + pos + 8;
        if (body[0] >= SYNOR__REC_CMD && body[0] <= SYNOR__REC_GROUP &&
            get64(body + 1) > min_seq && synor__crc32c(0, body, n) == get32(p + pos + 4))
            return pos;
    }
    return 0;
}

/* A damaged record at off: a torn tail is cut (and noted); damage with
 * intact records after it is refused unless salvaging. */
static int damaged_from(synor_market *m, const unsigned char *p, size_t len, size_t off,
                        size_t from, uint64_t applied, const char *what)
{
    size_t next = from < len ? intact_after(p, len, from, m->seq) : 0;
    if (next && !m->cfg.salvage)
        return synor__error(SYNOR_EPARSE,
                            "%s: %s at byte %zu, but intact records follow (byte %zu): this is "
                            "corruption, not a write torn by a crash; refusing to drop "
                            "acknowledged commands (salvage to cut the journal there)",
                            m->journal->path, what, off, next);
    if (next)
        snprintf(m->note, sizeof m->note,
                 "%s: salvaged: %s at byte %zu; cut the journal there, dropping %zu bytes "
                 "that held intact records; %llu records replayed",
                 m->journal->path, what, off, len - off, (unsigned long long)applied);
    else
        snprintf(m->note, sizeof m->note,
                 "%s: dropped %s at byte %zu (%zu bytes to the end): a write torn by a crash, "
                 "never applied; %llu records replayed%s",
                 m->journal->path, what, off, len - off, (unsigned long long)applied,
                 m->read_only ? " (left in the file: opened read-only)" : "");
    return 0;
}

static int damaged(synor_market *m, const unsigned char *p, size_t len, size_t off,
                   uint64_t applied, const char *what)
{
    return damaged_from(m, p, len, off, off + 1, applied, what);
}

/* Is the group whose header is at off whole: its length within the file
 * and every record in it intact, ending exactly at its end? */
static int group_whole(const unsigned char *p, size_t len, size_t off, size_t *end)
{
    uint64_t glen = get64(p + off + 17);
    size_t at = off + 25;
    *end = len - at < glen ? len : at + (size_t)glen;
    if (len - at < glen)
        return 0;
    while (at < *end) {
        if (*end - at < 8)
            return 0;
        uint32_t n = get32(p + at);
        if (n < 9 || n > MAX_RECORD || *end - at - 8 < n ||
            synor__crc32c(0, p + at + 8, n) != get32(p + at + 4) ||
            p[at + 8] == SYNOR__REC_GROUP)
            return 0;
        at += 8 + (size_t)n;
    }
    return 1;
}

/* Replays journal records after the snapshot; cuts a torn tail. */
static int replay(synor_market *m, const unsigned char *p, size_t len, off_t *valid_end)
{
    size_t off = 8;
    uint64_t applied = 0;
    m->replaying = 1;
    while (off < len) {
        if (len - off < 8 || get32(p + off) < 9 || get32(p + off) > MAX_RECORD ||
            len - off - 8 < get32(p + off)) {
            int rc = damaged(m, p, len, off, applied, "an incomplete record");
            if (rc) {
                m->replaying = 0;
                return rc;
            }
            break;
        }
        uint32_t n = get32(p + off), crc = get32(p + off + 4);
        const unsigned char *body = p + off + 8;
        if (synor__crc32c(0, body, n) != crc) {
            int rc = damaged(m, p, len, off, applied, "a record with a bad CRC");
            if (rc) {
                m->replaying = 0;
                return rc;
            }
            break;
        }
        int type = body[0];
        uint64_t seq = get64(body + 1);
        const unsigned char *pl = body + 9;
        size_t pn = n - 9;
        int rc = 0;
        if (seq > m->seq) {
            if (seq != m->seq + 1) {
                m->replaying = 0;
                return synor__error(SYNOR_EPARSE, "%s: record at byte %zu has seq %llu, expected "
                                                  "%llu: the journal does not follow the snapshot",
                                    m->journal->path, off, (unsigned long long)seq,
                                    (unsigned long long)(m->seq + 1));
            }
            size_t gend;
            if (type == SYNOR__REC_GROUP && pn == 8 && !group_whole(p, len, off, &gend)) {
                /* a basket is all or nothing: none of it unless all of it;
                 * damage after its end is corruption, as anywhere */
                rc = damaged_from(m, p, len, off, gend, applied, "an incomplete group of commands");
                if (rc) {
                    m->replaying = 0;
                    return rc;
                }
                break;
            } else if (type == SYNOR__REC_GROUP && pn == 8) {
                /* whole: its records follow */
            } else if (type == SYNOR__REC_CMD && cmd_size(pn)) {
                synor_market_cmd c;
                decode_cmd(pl, pn, &c);
                rc = synor__replay_cmd(m, &c);
                if (rc == SYNOR_EPARSE) {
                    char why[400];
                    synor__strlcpy(why, synor_errmsg(), sizeof why);
                    rc = synor__error(SYNOR_EPARSE, "%s: record at byte %zu: %s",
                                      m->journal->path, off, why);
                }
            } else if ((type == SYNOR__REC_RESOURCE || type == SYNOR__REC_OWNER ||
                        type == SYNOR__REC_ZONE) && pn && pn < 64) {
                char name[64];
                uint32_t id;
                memcpy(name, pl, pn);
                name[pn] = '\0';
                /* a name is checked as registration checks it: valid, new */
                int known = type == SYNOR__REC_ZONE
                                ? synor__zone_find(m, name, pn, &id) == 0
                                : synor__name_find(m, type == SYNOR__REC_RESOURCE, name, pn, &id) == 0;
                if (strlen(name) != pn || !synor__valid_name(name) || known)
                    rc = synor__error(SYNOR_EPARSE, "%s: record at byte %zu registers a name "
                                                    "that is %s", m->journal->path, off,
                                      known ? "registered already" : "not valid");
                else
                    rc = type == SYNOR__REC_RESOURCE ? synor__add_resource_raw(m, name, &id)
                         : type == SYNOR__REC_OWNER  ? synor__add_owner_raw(m, name, &id)
                                                     : synor__add_zone_raw(m, name, &id);
            } else {
                rc = synor__error(SYNOR_EPARSE, "%s: record at byte %zu has unknown type %d",
                                  m->journal->path, off, type);
            }
            applied++;
        }
        m->journal->records++;
        if (rc) {
            m->replaying = 0;
            return rc;
        }
        off += 8 + n;
    }
    m->replaying = 0;
    *valid_end = (off_t)(off < len ? off : len);
    return 0;
}

/* A journal of version 1 has been replayed by its rules; it is taken into
 * a snapshot and started again as version 2, so that no file mixes the
 * two. A crash in between leaves either the old journal (whose records the
 * new snapshot already holds: replay skips them) or an empty one. */
static int upgrade(synor_market *m)
{
    mjournal *j = m->journal;
    int rc = synor__journal_snapshot(m);
    if (rc)
        return rc;
    if (pwrite(j->fd, JOURNAL_MAGIC, 8, 0) != 8 || fdatasync(j->fd) != 0)
        return synor__error(SYNOR_EIO, "%s: cannot write the version 2 header: %s", j->path,
                            strerror(errno));
    return 0;
}

int synor__journal_open(synor_market *m)
{
    mjournal *j = synor__calloc(1, sizeof *j);
    if (!j)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    j->fd = -1;
    synor__buf_init(&j->pending);
    if (pthread_mutex_init(&j->sync_lock, NULL) != 0) {
        synor__free(j);
        return synor__error(SYNOR_ENOMEM, "cannot create the journal's lock");
    }
    m->journal = j;
    int ro = m->read_only;
    struct stat st;
    if (ro && (stat(m->dir, &st) != 0 || !S_ISDIR(st.st_mode)))
        return synor__error(SYNOR_ENOENT, "%s: no market here (%s)", m->dir,
                            errno == ENOENT ? "no such directory" : "not a directory");
    if (!ro && mkdir(m->dir, 0755) != 0 && errno != EEXIST)
        return synor__error(SYNOR_EIO, "%s: cannot create directory: %s", m->dir, strerror(errno));
    snprintf(j->path, sizeof j->path, "%s/journal.log", m->dir);
    snprintf(j->snap, sizeof j->snap, "%s/snapshot.bin", m->dir);
    int have_snap = stat(j->snap, &st) == 0;
    int rc = have_snap ? synor__snapshot_load(m, j->snap) : 0;
    if (rc)
        return rc;
    j->fd = open(j->path, ro ? O_RDONLY : O_RDWR | O_CREAT, 0644);
    if (j->fd < 0 && ro && errno == ENOENT)
        return have_snap ? 0
                         : synor__error(SYNOR_ENOENT, "%s: no market here (no journal.log or "
                                                      "snapshot.bin)", m->dir);
    if (j->fd < 0)
        return synor__error(SYNOR_EIO, "%s: cannot open: %s", j->path, strerror(errno));
    char *data;
    size_t len;
    if ((rc = synor__read_file(j->path, &data, &len)))
        return rc;
    off_t end = 8;
    if (len == 0) {
        if (!ro) {
            rc = write_all(j->fd, JOURNAL_MAGIC, 8, j->path);
            if (!rc && fdatasync(j->fd) != 0)
                rc = synor__error(SYNOR_EIO, "%s: fdatasync failed: %s", j->path,
                                  strerror(errno));
        }
    } else if (len < 8 || (memcmp(data, JOURNAL_MAGIC, 8) != 0 &&
                           memcmp(data, JOURNAL_MAGIC_V1, 8) != 0)) {
        rc = synor__error(SYNOR_EPARSE, "%s: not a synor market journal (bad header)", j->path);
    } else {
        int v1 = memcmp(data, JOURNAL_MAGIC_V1, 8) == 0;
        m->legacy = v1;
        rc = replay(m, (const unsigned char *)data, len, &end);
        m->legacy = 0;
        if (!rc && !ro && (size_t)end < len && ftruncate(j->fd, end) != 0)
            rc = synor__error(SYNOR_EIO, "%s: cannot cut the torn tail: %s", j->path,
                              strerror(errno));
        if (!rc && !ro && v1)
            rc = upgrade(m);
    }
    synor__free(data);
    if (!rc && !ro && lseek(j->fd, 0, SEEK_END) < 0)
        rc = synor__error(SYNOR_EIO, "%s: seek failed: %s", j->path, strerror(errno));
    return rc;
}

void synor__journal_close(synor_market *m)
{
    mjournal *j = m->journal;
    if (!j)
        return;
    if (j->fd >= 0)
        close(j->fd);
    synor__buf_free(&j->pending);
    pthread_mutex_destroy(&j->sync_lock);
    synor__free(j);
    m->journal = NULL;
}
