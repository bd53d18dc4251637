/* SPDX-License-Identifier: GPL-2.0-or-later */

#include <errno.h>
#include <math.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>

#include "common/macro.h"
#include "profile/rank.h"

/* One appearance of a file in one session. */
typedef struct RankEntry {
        int64_t file_id;
        size_t session;
        size_t index;
        double p;               /* normalised position */
} RankEntry;

typedef struct RankItem {
        RankResult result;
        double tie;             /* normalised position in the newest session containing the file */
} RankItem;

static int entry_compare_by_file(const void *a, const void *b) {
        const RankEntry *x = a, *y = b;

        if (x->file_id != y->file_id)
                return x->file_id < y->file_id ? -1 : 1;
        if (x->session != y->session)
                return x->session < y->session ? -1 : 1;
        if (x->index != y->index)
                return x->index < y->index ? -1 : 1;
        return 0;
}

static int entry_compare_by_position(const void *a, const void *b) {
        const RankEntry *x = a, *y = b;

        if (x->p != y->p)
                return x->p < y->p ? -1 : 1;
        /* Equal positions: the order does not change the median, keep it deterministic anyway. */
        if (x->session != y->session)
                return x->session < y->session ? -1 : 1;
        return 0;
}

static int item_compare(const void *a, const void *b) {
        const RankItem *x = a, *y = b;

        if (x->result.score != y->result.score)
                return x->result.score < y->result.score ? -1 : 1;
        if (x->tie != y->tie)
                return x->tie < y->tie ? -1 : 1;
        if (x->result.file_id != y->result.file_id)
                return x->result.file_id < y->result.file_id ? -1 : 1;
        return 0;
}

/* 0.8^age: recent sessions count more, but the newest alone (1) can never outvote the two before it
 * (0.8 + 0.64): with 1/(1+age) weights the newest carried half the weight up to three sessions and the
 * "merge" degenerated into "take the last session". */
static double session_weight(size_t s) {
        return pow(0.8, (double) s);
}

/* entries[0..n) are the appearances of one file, one per session, sorted by position. */
static double weighted_median(const RankEntry *entries, size_t n) {
        double total = 0, cum = 0;

        for (size_t i = 0; i < n; i++)
                total += session_weight(entries[i].session);

        /* The sums are of a handful of powers of 0.8: allow for rounding so that a cumulative weight
         * that is exactly half in exact arithmetic (the lower median) is not missed. */
        for (size_t i = 0; i < n; i++) {
                cum += session_weight(entries[i].session);
                if (cum >= total / 2 - 1e-9)
                        return entries[i].p;
        }

        return n > 0 ? entries[n - 1].p : 0;
}

int rank_merge(const RankSession *sessions, size_t n_sessions, RankResult **ret) {
        _cleanup_free_ RankEntry *entries = NULL;
        _cleanup_free_ RankItem *items = NULL;
        _cleanup_free_ RankResult *results = NULL;
        size_t n_entries = 0, n_items = 0;

        for (size_t s = 0; s < n_sessions; s++) {
                if (__builtin_add_overflow(n_entries, sessions[s].n_files, &n_entries))
                        return -ENOMEM;
        }

        /* The count is returned as an int. */
        if (n_entries > INT_MAX)
                return -ENOMEM;

        if (n_entries == 0) {
                *ret = NULL;
                return 0;
        }

        entries = calloc(n_entries, sizeof(RankEntry));
        if (!entries)
                return -ENOMEM;

        size_t k = 0;
        for (size_t s = 0; s < n_sessions; s++) {
                size_t n = sessions[s].n_files;

                for (size_t i = 0; i < n; i++)
                        entries[k++] = (RankEntry) {
                                .file_id = sessions[s].file_ids[i],
                                .session = s,
                                .index = i,
                                .p = n > 1 ? (double) i / (double) (n - 1) : 0,
                        };
        }

        /* Group by file; within a file, sessions newest first, and a file listed twice in one session
         * (should not happen) counts at its first access only. */
        qsort_safe(entries, n_entries, sizeof(RankEntry), entry_compare_by_file);

        items = calloc(n_entries, sizeof(RankItem));
        if (!items)
                return -ENOMEM;

        for (size_t start = 0; start < n_entries;) {
                size_t end = start, m = start;

                /* Compact the group to one entry per session, in place. */
                while (end < n_entries && entries[end].file_id == entries[start].file_id) {
                        if (end == start || entries[end].session != entries[m - 1].session)
                                entries[m++] = entries[end];
                        end++;
                }

                size_t n = m - start;
                /* Sorted by session, so the first one is the newest session containing the file. */
                double tie = entries[start].p;

                qsort_safe(entries + start, n, sizeof(RankEntry), entry_compare_by_position);

                items[n_items++] = (RankItem) {
                        .result = {
                                .file_id = entries[start].file_id,
                                .score = weighted_median(entries + start, n),
                                .seen = (unsigned) n,
                        },
                        .tie = tie,
                };

                start = end;
        }

        qsort_safe(items, n_items, sizeof(RankItem), item_compare);

        results = calloc(n_items, sizeof(RankResult));
        if (!results)
                return -ENOMEM;
        for (size_t i = 0; i < n_items; i++)
                results[i] = items[i].result;

        *ret = TAKE_PTR(results);
        return (int) n_items;
}

/* One session's range, placed: which file of the merge, where in the session. */
typedef struct RangePiece {
        size_t file;            /* index into the files */
        uint64_t offset, end;
        size_t session;
        double p;
} RangePiece;

/* A range of the layout order, with its sort keys. */
typedef struct RangeItem {
        RankRange range;
        double score, tie;
        size_t file;
} RangeItem;

typedef struct FileSlot {
        int64_t id;
        size_t index;
} FileSlot;

static int slot_compare(const void *a, const void *b) {
        const FileSlot *x = a, *y = b;

        return x->id < y->id ? -1 : x->id > y->id;
}

static int piece_compare(const void *a, const void *b) {
        const RangePiece *x = a, *y = b;

        if (x->file != y->file)
                return x->file < y->file ? -1 : 1;
        if (x->offset != y->offset)
                return x->offset < y->offset ? -1 : 1;
        return 0;
}

/* By session, the earliest position first: the first of a session's ranges a merged range covers. */
static int entry_compare_by_session(const void *a, const void *b) {
        const RankEntry *x = a, *y = b;

        if (x->session != y->session)
                return x->session < y->session ? -1 : 1;
        if (x->p != y->p)
                return x->p < y->p ? -1 : 1;
        return 0;
}

/* By file, then session (newest first), then position: a file's places, one per session first. */
static int entry_compare_by_index(const void *a, const void *b) {
        const RankEntry *x = a, *y = b;

        if (x->index != y->index)
                return x->index < y->index ? -1 : 1;
        if (x->session != y->session)
                return x->session < y->session ? -1 : 1;
        if (x->p != y->p)
                return x->p < y->p ? -1 : 1;
        return 0;
}

static int range_item_compare(const void *a, const void *b) {
        const RangeItem *x = a, *y = b;

        if (x->score != y->score)
                return x->score < y->score ? -1 : 1;
        if (x->tie != y->tie)
                return x->tie < y->tie ? -1 : 1;
        if (x->file != y->file)
                return x->file < y->file ? -1 : 1;
        if (x->range.offset != y->range.offset)
                return x->range.offset < y->range.offset ? -1 : 1;
        return 0;
}

/* A session's places, files without a range in it and ranges, on one scale (see rank.h): the ranges in
 * their order, each file without a range at its place among the files, before the first range of a file
 * that comes after it. Sets p_range[0..n_ranges) and adds an entry (file index as `index`) for each such
 * file to *wentries. */
static int session_places(const RankSession *fs, const RankRangeSession *rs, size_t session,
                          const FileSlot *slots, size_t n_files, double *p_range,
                          RankEntry *wentries, size_t *n_wentries) {
        _cleanup_free_ bool *ranged = NULL;
        _cleanup_free_ size_t *order = NULL;     /* per range: its file's place among the session's files */
        _cleanup_free_ size_t *pos_of = NULL;    /* per file of the merge: its first place in the session */
        size_t n_units = 0, cursor = 0, first_w = *n_wentries;

        ranged = calloc(fs->n_files + 1, sizeof *ranged);
        order = calloc(rs->n_ranges + 1, sizeof *order);
        pos_of = calloc(n_files + 1, sizeof *pos_of);
        if (!ranged || !order || !pos_of)
                return -ENOMEM;
        for (size_t i = 0; i < n_files; i++)
                pos_of[i] = SIZE_MAX;
        for (size_t f = fs->n_files; f > 0; f--) {
                FileSlot key = { .id = fs->file_ids[f - 1] };
                const FileSlot *slot = bsearch_safe(&key, slots, n_files, sizeof *slots, slot_compare);

                if (slot)
                        pos_of[slot->index] = f - 1;
        }
        for (size_t i = 0; i < rs->n_ranges; i++) {
                FileSlot key = { .id = rs->ranges[i].file_id };
                const FileSlot *slot = bsearch_safe(&key, slots, n_files, sizeof *slots, slot_compare);

                order[i] = slot ? pos_of[slot->index] : SIZE_MAX;
                if (order[i] != SIZE_MAX)
                        ranged[order[i]] = true;
        }
        for (size_t i = 0; i <= rs->n_ranges; i++) {
                size_t upto = i < rs->n_ranges ? order[i] : fs->n_files;

                /* the files without a range that come before this range's file */
                for (; upto != SIZE_MAX && cursor < fs->n_files && cursor <= upto; cursor++) {
                        FileSlot key = { .id = fs->file_ids[cursor] };
                        const FileSlot *slot;

                        if (ranged[cursor] || (i < rs->n_ranges && cursor == upto))
                                continue;
                        slot = bsearch_safe(&key, slots, n_files, sizeof *slots, slot_compare);
                        if (!slot)
                                continue;
                        wentries[(*n_wentries)++] = (RankEntry) { .session = session, .index = slot->index,
                                                                  .p = (double) n_units++ };
                }
                if (i < rs->n_ranges)
                        p_range[i] = (double) n_units++;
        }
        for (size_t i = 0; i < rs->n_ranges; i++)
                p_range[i] = n_units > 1 ? p_range[i] / (double) (n_units - 1) : 0;
        for (size_t w = first_w; w < *n_wentries; w++)
                wentries[w].p = n_units > 1 ? wentries[w].p / (double) (n_units - 1) : 0;
        return 0;
}

int rank_merge_ranges(const RankSession *file_sessions, const RankRangeSession *sessions, size_t n_sessions,
                      const RankResult *files, size_t n_files, RankRange **ret) {
        _cleanup_free_ FileSlot *slots = NULL;
        _cleanup_free_ RangePiece *pieces = NULL;
        _cleanup_free_ RankEntry *entries = NULL;
        _cleanup_free_ RangeItem *items = NULL;
        _cleanup_free_ RankRange *out = NULL;
        _cleanup_free_ bool *has = NULL;
        _cleanup_free_ double *p_range = NULL;
        _cleanup_free_ RankEntry *wentries = NULL, *went = NULL;
        size_t n_pieces = 0, n_all = 0, n_items = 0, n_all_files = 0, n_wentries = 0;
        int k;

        for (size_t s = 0; s < n_sessions; s++)
                if (__builtin_add_overflow(n_all, sessions[s].n_ranges, &n_all) ||
                    __builtin_add_overflow(n_all_files, file_sessions[s].n_files, &n_all_files))
                        return -ENOMEM;
        if (n_all > INT_MAX || n_files > INT_MAX - n_all)
                return -ENOMEM;
        p_range = calloc(n_all + 1, sizeof *p_range);
        wentries = calloc(n_all_files + 1, sizeof *wentries);
        went = calloc(n_sessions + 1, sizeof *went);
        if (!p_range || !wentries || !went)
                return -ENOMEM;

        slots = calloc(n_files + 1, sizeof *slots);
        has = calloc(n_files + 1, sizeof *has);
        pieces = calloc(n_all + 1, sizeof *pieces);
        entries = calloc(n_all + 1, sizeof *entries);
        items = calloc(n_all + n_files + 1, sizeof *items);
        if (!slots || !has || !pieces || !entries || !items)
                return -ENOMEM;
        for (size_t i = 0; i < n_files; i++)
                slots[i] = (FileSlot) { .id = files[i].file_id, .index = i };
        qsort_safe(slots, n_files, sizeof *slots, slot_compare);

        for (size_t s = 0, base = 0; s < n_sessions; base += sessions[s].n_ranges, s++) {
                size_t n = sessions[s].n_ranges;

                /* positions of a session with page data: its ranges and its files without one, on one scale;
                 * of a session without: its files' */
                if (n > 0) {
                        k = session_places(&file_sessions[s], &sessions[s], s, slots, n_files, p_range + base,
                                           wentries, &n_wentries);
                        if (k < 0)
                                return k;
                } else
                        for (size_t f = 0; f < file_sessions[s].n_files; f++) {
                                FileSlot key = { .id = file_sessions[s].file_ids[f] };
                                const FileSlot *slot = bsearch_safe(&key, slots, n_files, sizeof *slots, slot_compare);
                                size_t nf = file_sessions[s].n_files;

                                if (slot)
                                        wentries[n_wentries++] = (RankEntry) {
                                                .session = s, .index = slot->index,
                                                .p = nf > 1 ? (double) f / (double) (nf - 1) : 0,
                                        };
                        }
                for (size_t i = 0; i < n; i++) {
                        const RankRange *r = sessions[s].ranges + i;
                        FileSlot key = { .id = r->file_id };
                        const FileSlot *slot;

                        slot = bsearch_safe(&key, slots, n_files, sizeof *slots, slot_compare);
                        if (!slot || r->length == 0 || r->offset + r->length < r->offset)
                                continue;
                        pieces[n_pieces++] = (RangePiece) {
                                .file = slot->index,
                                .offset = r->offset,
                                .end = r->offset + r->length,
                                .session = s,
                                .p = p_range[base + i],
                        };
                }
        }

        qsort_safe(pieces, n_pieces, sizeof *pieces, piece_compare);

        /* Per file, sorted by offset: a piece that starts before the end so far (they overlap) joins the
         * range. Pieces that only touch stay apart: a start that read A 0-40K, then B, then A 40-80K wants
         * B between them; touching ranges that end up next to each other are joined after the sort. */
        for (size_t start = 0; start < n_pieces;) {
                size_t end = start + 1, n = 0, m = 0;
                uint64_t stop = pieces[start].end;

                while (end < n_pieces && pieces[end].file == pieces[start].file && pieces[end].offset < stop) {
                        stop = MAX(stop, pieces[end].end);
                        end++;
                }

                for (size_t i = start; i < end; i++)
                        entries[n++] = (RankEntry) { .session = pieces[i].session, .p = pieces[i].p };
                /* One entry per session, its earliest; the first is the newest session's. */
                qsort_safe(entries, n, sizeof *entries, entry_compare_by_session);
                for (size_t i = 0; i < n; i++)
                        if (i == 0 || entries[i].session != entries[m - 1].session)
                                entries[m++] = entries[i];
                double tie = entries[0].p;
                qsort_safe(entries, m, sizeof *entries, entry_compare_by_position);

                items[n_items++] = (RangeItem) {
                        .range = {
                                .file_id = files[pieces[start].file].file_id,
                                .offset = pieces[start].offset,
                                .length = stop - pieces[start].offset,
                        },
                        .score = weighted_median(entries, m),
                        .tie = tie,
                        .file = pieces[start].file,
                };
                has[pieces[start].file] = true;
                start = end;
        }

        /* Files no session with page data read: whole, at the weighted median of their places (among the
         * ranges in sessions with page data, among the files in the others). */
        qsort_safe(wentries, n_wentries, sizeof *wentries, entry_compare_by_index);
        for (size_t i = 0, w = 0; i < n_files; i++) {
                size_t m = 0;

                for (; w < n_wentries && wentries[w].index < i; w++)
                        ;
                for (; w < n_wentries && wentries[w].index == i; w++)
                        if (m == 0 || wentries[w].session != went[m - 1].session)
                                went[m++] = wentries[w];
                if (has[i])
                        continue;
                if (m == 0) {
                        items[n_items++] = (RangeItem) {
                                .range = { .file_id = files[i].file_id },
                                .score = files[i].score,
                                .tie = files[i].score,
                                .file = i,
                        };
                        continue;
                }
                double tie = went[0].p;         /* the newest session's */
                qsort_safe(went, m, sizeof *went, entry_compare_by_position);
                items[n_items++] = (RangeItem) {
                        .range = { .file_id = files[i].file_id },
                        .score = weighted_median(went, m),
                        .tie = tie,
                        .file = i,
                };
        }

        qsort_safe(items, n_items, sizeof *items, range_item_compare);

        out = calloc(n_items + 1, sizeof *out);
        if (!out)
                return -ENOMEM;
        size_t n_out = 0;
        for (size_t i = 0; i < n_items; i++) {
                RankRange *last = n_out > 0 ? &out[n_out - 1] : NULL;

                if (last && last->length > 0 && items[i].range.length > 0 &&
                    last->file_id == items[i].range.file_id && last->offset + last->length == items[i].range.offset)
                        last->length += items[i].range.length;
                else
                        out[n_out++] = items[i].range;
        }

        *ret = TAKE_PTR(out);
        return (int) n_out;
}
