/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "relocate/donor.h"
#include "relocate/mover.h"

/* Clearing a window for a donor below where the one-range donor would go (see room.h), in two steps around
 * a mover run of the files that hold the window, which the mover makes itself (room-making never calls it):
 * mover_room_plan() chooses the window and names those files, the caller moves them elsewhere (with a donor
 * the allocator places itself, never aimed low), and mover_room_commit() checks they left and commits. */
typedef struct RoomEvacuation {
        MoveItem *items;                /* the files to move out of the window, for a run of their own */
        MoveOutcome *outcomes;          /* that run's outcomes, one per item */
        size_t n;                       /* 0: the window is clear already */
        char (*names)[32];              /* the items' paths: "inode N" */
        DonorWindow window;             /* without its pilot until committed */
        int pilot_fd;                   /* the donor's pilot, made before the window is chosen (see
                                         * donor_pilot_create()); -EBADF: none */
} RoomEvacuation;

void room_evacuation_done(RoomEvacuation *e);

/* Plan the window for a donor of `blocks` blocks; the files in items[] are never moved out (their cells
 * are not used). Sets st->room_start. Returns 1 with *ret filled (free with room_evacuation_done()), 0
 * when there is no window worth clearing (nothing to run), or a negative errno. */
int mover_room_plan(const MoverOptions *o, const MoveItem *items, size_t n, uint64_t blocks, uint64_t bsize,
                    RoomEvacuation *ret, MoverStats *st);

/* After the run over e->items (run_result and run_stats: what mover_run() returned and filled; not looked
 * at when e->n is 0): fill *ret's start and floor (for donor_allocate()) and its pilot (donor_allocate()
 * takes it over), and st->room_* for what was moved. Returns 1 with *ret set when the window is clear, 0
 * when clearing it failed (nothing was lost: files moved out stay moved, whole), or a negative errno for
 * failures that should stop the run (cancelled: -ECANCELED). */
int mover_room_commit(const MoverOptions *o, RoomEvacuation *e, int run_result, const MoverStats *run_stats,
                      DonorWindow *ret, MoverStats *st);
