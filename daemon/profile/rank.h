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
