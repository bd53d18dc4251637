/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Merging several recorded sessions of one profile into one order ("robust rank").
 *
 * Input: sessions newest first; session s lists file ids in first-access order.
 * Rule (documented in seeklessd(8), "PROFILES"):
 *   - weight of session s (0 = newest) is w_s = 0.8^s: recent sessions count more, yet the newest alone
 *     cannot outvote the two before it (1 < 0.8 + 0.64);
 *   - the normalised position of file f in session s is p = index / (n_s - 1) (0 when n_s == 1);
 *   - score(f) = weighted median of p over the sessions that contain f: the smallest p whose cumulative
 *     weight (positions sorted ascending) reaches half of the total weight of those sessions;
 *   - files are ordered by score ascending; ties are broken by the file's normalised position in the
 *     newest session containing it, then by file id;
 *   - every file seen in any of the sessions is included (a file seen once still gets relocated with its
 *     profile; old sessions age out through KeepBoots=/KeepLaunches=).
 * The median, unlike a mean, is not dragged by one session in which a file came unusually late. */

typedef struct RankSession {
        const int64_t *file_ids;  /* in access order */
        size_t n_files;
} RankSession;

typedef struct RankResult {
        int64_t file_id;
        double score;             /* weighted median normalised position, 0..1 */
        unsigned seen;            /* in how many of the sessions the file appears */
} RankResult;

/* Returns the number of results (>= 0) with *ret allocated (free()), or -ENOMEM. sessions[0] is newest. */
int rank_merge(const RankSession *sessions, size_t n_sessions, RankResult **ret);

/* Merging the same sessions' byte ranges into the profile's layout order (seeklessd(8), "PROFILES", Ranges):
 *   - a file's hot ranges are the union of the ranges the sessions with page data read of it, ranges that
 *     overlap coalesced into one (ranges that only touch stay apart: another file may have been read
 *     between them). A session with page data that read none of a file (it was
 *     cached) does not shrink it; sessions without page data say nothing about ranges. A file no session
 *     with page data has ranges for counts whole (one range, length 0);
 *   - a session with page data has n_s places: its ranges in first-touch order (interleaved across files),
 *     and each of its files without a range in it (cached) before the first range of a file that comes
 *     after it among the session's files; p = place / (n_s - 1). A merged range's position in a session
 *     is that of the first of the session's ranges it covers; its score is the weighted median of p over
 *     the sessions with page data whose ranges it covers, with the same weights as above;
 *   - a whole file's score is the weighted median of its places: p among the places in sessions with
 *     page data, its normalised position among the files in sessions without (its file score when it
 *     has none: not in any kept session);
 *   - ranges are ordered by score, then by the position in the newest session covering it (a whole file:
 *     its score), then in the order of the files, then by offset; ranges of one file that then follow each
 *     other and on in the file are joined. Without page data the order is the files'.
 * Ranges of files not in `files` are ignored. */
typedef struct RankRange {
        int64_t file_id;
        uint64_t offset, length;        /* bytes; length 0: the whole file */
} RankRange;

typedef struct RankRangeSession {
        const RankRange *ranges;        /* in first-touch order; none: the session has no page data */
        size_t n_ranges;
} RankRangeSession;

/* sessions[0] is newest, as for rank_merge(); file_sessions[i] are the files of sessions[i] in access order
 * (rank_merge()'s input); files is rank_merge()'s result. Returns the number of ranges (>= n_files) with
 * *ret allocated (free()), or -ENOMEM. */
int rank_merge_ranges(const RankSession *file_sessions, const RankRangeSession *sessions, size_t n_sessions,
                      const RankResult *files, size_t n_files, RankRange **ret);
