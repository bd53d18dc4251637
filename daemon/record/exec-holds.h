/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fs/fid.h"

/* What the exec thread needs to keep a file's execs away from its move (recorder.h, "Holding execs"):
 * the files whose execs wait now, and the execs it let through lately. The kernel denies writing to a file
 * being exec'd only a moment after we allow the exec (and an ELF interpreter's until the program is
 * loaded); a move that opens the file for writing in that moment would make the exec fail with ETXTBSY.
 * Plain data, no locking: the Recorder's lock covers it. */

#define EXEC_HOLDS_MAX 8
#define EXEC_RECENT_MAX 1024

typedef struct RecentExec {
        FileKey key;            /* the file exec'd (or loaded as an interpreter) */
        pid_t pid;
        dev_t exe_dev;          /* the process's executable when the exec was allowed: once it is another, */
        ino_t exe_ino;          /* the exec got past the point where it takes the write denial (0/0: unknown) */
        uint64_t usec;          /* CLOCK_MONOTONIC when it was allowed */
} RecentExec;

typedef struct ExecHolds {
        FileKey held[EXEC_HOLDS_MAX];
        size_t n_held;
        RecentExec recent[EXEC_RECENT_MAX];     /* a ring: the last EXEC_RECENT_MAX allowed execs */
        size_t n_recent, next_recent;
} ExecHolds;

/* -EEXIST: held already; -ENOSPC: EXEC_HOLDS_MAX held. */
int exec_holds_add(ExecHolds *h, const FileKey *key);
/* -ENOENT: not held. */
int exec_holds_remove(ExecHolds *h, const FileKey *key);
bool exec_holds_has(const ExecHolds *h, const FileKey *key);

void exec_holds_note_allowed(ExecHolds *h, const RecentExec *e);
/* The execs of key allowed at or after since_usec, newest first, at most max of them; returns how many, or
 * -EOVERFLOW when the ring no longer reaches back to since_usec (more execs than it holds since then: an
 * exec of key may have been among those it lost). */
int exec_holds_recent(const ExecHolds *h, const FileKey *key, uint64_t since_usec, RecentExec *ret, size_t max);
