/* market_cli.h - what the files of `synor market` share: an open market
 * with its event output, and the views and the batch runner. */
#ifndef SYNOR_MARKET_CLI_H
#define SYNOR_MARKET_CLI_H

#include <stddef.h>

#include "cli/cli.h"
#include "market/cmdline.h"

/* Events not yet acknowledged, as JSON lines: printed only after the
 * commit that makes them durable. */
typedef struct mout {
    char *data;
    size_t len, cap;
    int failed; /* out of memory: events were lost */
} mout;

typedef struct mctx {
    synor_market *m;
    synor_catalog *cat; /* NULL for the read-only views */
    mout out;
    long line;        /* batch input line of the current command (0 = none) */
    int print_events; /* collect events into out */
    int keep_events;  /* out holds kept events (mcli_kept_text), not text */
} mctx;

/* Opens the market in dir: writable (loads the catalog), or read-only
 * (nothing is created or changed), with an fsync policy (synor_fsync_policy,
 * or -1 for the default); prints any error. 0 or -1. */
int mcli_open(mctx *x, const cli_globals *g, const char *dir, int writable, int print,
              int replay_events, int salvage, int fsync);
void mcli_close(mctx *x);
/* Commits, then writes what the commit acknowledged to fd 1. 0 or -1
 * (message printed). */
int mcli_flush(mctx *x);
/* The kept events of `kept` (x->keep_events) as JSON lines, appended to
 * text: 0, or -1 out of memory. */
int mcli_kept_text(const mout *kept, mout *text);

/* Views (market_view.c); each returns a CLI exit status. */
int mcli_book(mctx *x, const char *res, int depth);
int mcli_prices(mctx *x, const char *res);
int mcli_orders(mctx *x, const char *res);
int mcli_leases(mctx *x);
/* trades and replay print what recovery delivered (x opened with
 * replay_events) */
int mcli_trades(mctx *x);
int mcli_replay(mctx *x);

/* The batch (market_batch.c): JSON-lines commands from fd, events to fd 1.
 * A terminal or a pipe is answered line by line, a file in batches.
 * CLI_OK when every line was applied, CLI_FAIL when a line was rejected or
 * malformed (all others still applied) or when the batch had to stop (out
 * of memory, I/O: the journal holds exactly the commands whose events were
 * printed). */
int mcli_batch(mctx *x, int fd, const char *name);

/* A file batch's lines read ahead by another thread (market_readahead.c),
 * in chunks, each line as far as it is read without the market. */
enum { MLINE_TEXT, MLINE_PARSED, MLINE_EMPTY };
typedef struct mline {
    const char *text; /* the line, without its newline and trailing CRs */
    size_t len;
    int form;   /* MLINE_PARSED: p holds it; MLINE_TEXT: read it from text */
    int counts; /* ended by a newline (the last line may not be) */
    synor__parsed_line p;
} mline;
typedef struct mreader mreader;
/* Starts reading fd (a file): NULL when no thread starts. */
mreader *mcli_reader_start(int fd, const char *name);
/* The next chunk's lines (valid until the next call): 1; 0 at the end of
 * the input; -1 when reading stopped (out of memory, an I/O error: the
 * message printed). */
int mcli_reader_next(mreader *r, const mline **lines, size_t *n);
void mcli_reader_stop(mreader *r);

#endif
