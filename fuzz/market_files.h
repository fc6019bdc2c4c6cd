/* market_files.h - what the market recovery harnesses share
 * (fuzz_market_journal.c, fuzz_market_snapshot.c): a market directory
 * made from fuzzed bytes, opened read-only and to write, with the
 * contract of recovery checked.
 *
 * The contract:
 *   - opening read-only changes no byte of the directory and creates
 *     nothing; it succeeds exactly when opening to write does (both
 *     recover, or both refuse, the refusal naming the file);
 *   - a market that opened holds every invariant, and both opens reach
 *     the same state hash;
 *   - closed and reopened, the market recovers that hash again (recovery
 *     leaves the directory in a state it recovers from), and a snapshot
 *     taken and reopened keeps it;
 *   - the recovered market takes a valid command, keeps its invariants,
 *     and a reopen finds the command. */
#ifndef SYNOR_FUZZ_MARKET_FILES_H
#define SYNOR_FUZZ_MARKET_FILES_H

#include <stddef.h>
#include <stdint.h>

/* Writes journal (may be NULL: no file) and snapshot (may be NULL) into a
 * new directory and checks the contract above. */
void fuzz_market_recovery(const uint8_t *journal, size_t journal_len, const uint8_t *snapshot,
                          size_t snapshot_len);

/* Removes a market directory made for one input (its files, then it). */
void fuzz_remove_dir(const char *dir);

/* Sets the CRC-32C of every complete record of a journal (in place) so that
 * mutated records reach the replay's checks rather than stopping at the
 * CRC; len is the whole file, header included. */
void fuzz_market_fix_journal(uint8_t *journal, size_t len);
/* Sets a snapshot's body length and CRC (in place). */
void fuzz_market_fix_snapshot(uint8_t *snapshot, size_t len);

#endif
