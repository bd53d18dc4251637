/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fs/fid.h"
#include "store/move-reason.h"

/* The mover: lays out a batch of files, or ranges of files, on one ext4 filesystem back to back, in the
 * given order, with EXT4_IOC_MOVE_EXT into one O_TMPFILE donor (see doc/kernel.md §1):
 *
 *   - an item is a whole file, or a range of one (offset and length, page aligned): MOVE_EXT moves any
 *     block range of a file (orig_start = the range's first block), so a range's blocks go to its slice
 *     and the rest of the file stays where it is; a file may have several items, its ranges in the order
 *     the donor receives them, interleaved with other files' as the caller wants. Everything below said
 *     of a file holds per item: a range gets its own checks, moves, write-out check and outcome;
 *   - a batch whose every item already lies where the mover would put it (each item's allocated blocks
 *     contiguous, each item right after the one before, within a page) is left alone when the caller asks
 *     (keep_in_place): every item is MOVE_IN_PLACE "in place" and no donor is made, so a second run of the
 *     same batch moves nothing;
 *
 *   - one donor per batch, created with O_TMPFILE on the target filesystem and fallocated (mode 0, so its
 *     i_size covers every slice) to the sum of the items' lengths, each slice rounded up to a page so that
 *     orig_start and donor_start agree within a page whatever the block size;
 *   - the donor is aimed at the lowest free space with mb_stream_req raised (see donor.h): in one range,
 *     or in several ranges (segments) when the free space below the lowest range that would hold it
 *     whole is in pieces of at least 1 MiB; it is filled segment after segment, and a file that does not
 *     fit in the rest of a segment starts at the next one while the donor's spare room allows (else it is
 *     split where the segment ends); its contiguity is checked with FIEMAP, a one-range donor in more
 *     physical runs than needed is compared with the allocator's own choice and the better one used; the
 *     result reports how many runs the layout could not avoid;
 *   - per file: re-open by handle (identity checked: a file replaced since planning is skipped), a read
 *     lease probe (fails while someone has it open for writing), size and mtime compared with the plan,
 *     fdatasync, drop its page cache (the 6.16-6.18 large-folio pitfall), a range that lies past the
 *     end of the file skipped, then MOVE_EXT in a loop on moved_len; EINTR is retried, EBUSY/ETXTBSY mean "retry later", ENODATA after progress is a
 *     trailing hole (done), ENOSPC stops the batch;
 *   - afterwards the file's moved data is written out and waited for: if that write failed (the disk
 *     took no data at the new blocks; ext4 commits the swap all the same, see doc/kernel.md §6), the same
 *     calls are made again, which swap the old blocks back and rewrite them from the page cache, and the
 *     batch stops (io_error); so does it when the filesystem went read-only or a flush failed before a
 *     move. Then the file's cache is dropped (kept when moving back failed: the only good copy may be
 *     there); after the batch the filesystem is synced and the donor closed, which frees the old blocks
 *     (after a crash the kernel frees them at mount: orphan list).
 *   - cancellation is checked between files and between 8 MiB chunks of big files, so a cancel takes
 *     effect within a second; the rate limit sleeps between chunks;
 *   - a file that can be exec'd is opened for writing only with its execs held (MoverExecGate), moved in 1
 *     MiB chunks, and let go as soon as an exec of it waits (what is moved stays moved; the rest in a later
 *     run), so an exec waits at most one chunk.
 * The data is never copied by us: the kernel swaps extents under the inode lock, journaled. */

typedef struct MoveItem {
        int64_t file_id;        /* caller's id, passed back in progress */
        const char *path;       /* for messages */
        FileKey key;            /* identity at planning time */
        uint64_t size;          /* size at planning time */
        int64_t mtime_ns;       /* mtime at planning time */
        uint64_t offset;        /* byte offset of the range in the file (page-aligned) */
        uint64_t length;        /* bytes of the range; 0: the whole file (offset must be 0) */
} MoveItem;

/* The bytes an item names: its range's length, or the whole file's planned size. */
static inline uint64_t move_item_bytes(const MoveItem *it) {
        return it->length > 0 ? it->length : it->size;
}

typedef enum MoveResult {
        MOVE_DONE,              /* moved into its slice */
        MOVE_IN_PLACE,          /* nothing to do: already where it should be */
        MOVE_SKIPPED,           /* will not be moved: reason says why */
        MOVE_RETRY,             /* busy now (running executable, writer, EBUSY): try in a later run */
        _MOVE_RESULT_MAX,
} MoveResult;

typedef struct MoveOutcome {
        MoveResult result;
        MoveReason why;         /* for SKIPPED/RETRY: what decisions look at */
        char reason[96];        /* for SKIPPED/RETRY, to show: "gone or replaced since recording", "running executable", ... */
        uint64_t bytes;         /* bytes moved */
} MoveOutcome;

/* A file open for writing cannot be exec'd (ETXTBSY), and the mover opens each file it moves for writing:
 * around the move of a file that can be exec'd (one with an x bit: nothing else can be exec'd or loaded as
 * an interpreter), the gate holds its execs, which then wait instead of failing (recorder.h, "Holding
 * execs"). hold: >= 0 held; -EBUSY: an exec of it may be under way (moved in a later run); another
 * negative errno: execs cannot be held (then not moved either: in a later run, or by the early pass).
 * waiting: an exec of it waits now (the mover lets the file go after the chunk under way). release: the
 * mover no longer has it open for writing. */
typedef struct MoverExecGate {
        int (*hold)(void *userdata, const FileKey *key, int fd);
        bool (*waiting)(void *userdata, const FileKey *key);
        void (*release)(void *userdata, const FileKey *key);
        void *userdata;
} MoverExecGate;

typedef struct MoverOptions {
        int mount_fd;                   /* a directory fd on the target filesystem (handles, O_TMPFILE) */
        uint64_t rate_limit_bps;        /* 0: unlimited */
        atomic_bool *cancel;            /* set from another thread to stop between files/chunks */
        const char *sysfs_dir;          /* /sys/fs/ext4/<dev>, for the mb_stream_req fallback (NULL: no fallback) */
        const char *state_file;         /* where the original mb_stream_req is saved while changed (crash-safe) */
        /* clear a window low on the disk for the donor first, when the free space there is in pieces (see
         * room.h): other files are moved out of it (needs sysfs_dir and state_file) */
        bool make_room;
        /* byte address: first try to put the donor in the free space from there on (0: no preference) */
        uint64_t near;
        /* a batch already laid out as it would lay it out is left alone (see above); else (the early pass,
         * which moves its files next to the others wherever they are) it is moved all the same */
        bool keep_in_place;
        /* files that can be exec'd are moved only with their execs held (above); NULL: moved like any other
         * (tests of the mover alone) */
        const MoverExecGate *exec_gate;
        /* a moved file's new layout is committed (fsync) after its progress call (which writes its
         * checkpoint) and before the next file moves, so that a power cut never leaves a moved file
         * pending; true leaves it to the journal's periodic commit (benchmarks) */
        bool lazy_commit;
        /* called after each file (from the mover's thread) */
        void (*progress)(void *userdata, size_t index, const MoveOutcome *o);
        void *userdata;
} MoverOptions;

typedef struct MoverStats {
        uint64_t files_moved, bytes_moved;
        uint64_t donor_runs;            /* physical runs of the donor actually used (1 = fully contiguous) */
        uint64_t donor_segments;        /* free ranges it was made in on purpose (see donor_allocate()) */
        uint64_t donor_physical;        /* byte address of the donor's first block (UINT64_MAX: no donor, or unknown) */
        uint64_t donor_chunk;           /* bytes: the donor was made in buddies, aimed this much at a time (0: not) */
        unsigned donor_attempts;        /* donors allocated: 2 when the mb_stream_req fallback ran */
        uint64_t room_start;            /* byte address of the window chosen for the donor (UINT64_MAX: none) */
        uint64_t room_files, room_bytes;        /* files (and their bytes) moved out of it */
        bool room_cleared;              /* all of them: the window is free */
        bool room_used;                 /* the donor was made in it */
        bool room_cut, room_replanned;  /* its last buddy cut, its pieces planned again (Donor.cut, .replanned) */
        bool donor_near;                /* the donor was made near MoverOptions.near */
        bool cancelled;
        bool out_of_space;              /* the donor could not be allocated (or MOVE_EXT hit ENOSPC) */
        int io_error;                   /* negative errno: the filesystem failed under the batch, which stopped */
} MoverStats;

/* Move items[0..n) in order. outcomes[] (n entries) receives each item's result; items after a cancel, an
 * ENOSPC or a failure of the filesystem are left as MOVE_RETRY. Returns 0, or a negative errno for failures that prevented starting
 * (e.g. O_TMPFILE unsupported; -EINVAL for an item whose range is not page aligned, or has an offset but
 * no length). */
int mover_run(const MoverOptions *o, const MoveItem *items, size_t n, MoveOutcome *outcomes, MoverStats *ret_stats);

/* Restore an mb_stream_req value left changed by a crash (state_file exists). Safe to call at startup. */
int mover_restore_tunables(const char *state_file);

/* For log lines: "<prefix>from X MiB" (where the donor starts), or "" when that is not known. */
const char *mover_donor_where(const MoverStats *st, const char *prefix, char *buf, size_t size);
