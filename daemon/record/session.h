/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/macro.h"
#include "store/profile-kind.h"
#include "fs/fid.h"

/* One recording in progress: the boot, or one launch of one executable. Files are kept once each, in
 * first-access order, with a hash index so the per-event cost is O(1). */
/* A run of pages [first, first + n) of one file. */
typedef struct PageSpan {
        uint64_t first, n;
} PageSpan;

/* Where a reader found a file: its directory's key and its name in it, as fanotify reported them. A file's
 * handle no longer gives its path once the kernel has evicted its dentry; a directory's handle always does. */
typedef struct SessionWhere {
        FileKey dir;
        char name[];
} SessionWhere;

typedef struct SessionFile {
        FileKey key;
        uint64_t offset_usec;   /* first access relative to the session start */
        uint32_t path;          /* named soon after the read, while the kernel can still name it: its
                                 * place in the session's path store + 1, 0: none (session_set_path(),
                                 * session_path()) */
        SessionWhere *where;    /* until it is named: its directory and name, NULL when unknown */
} SessionFile;

/* The pages of one file recorded so far: sorted, disjoint, never adjacent, exactly the union of the file's
 * ranges in touches. Most files are read in one piece, so a single span that fits 32 bits is kept in place;
 * spans are allocated from the second on (or for a span beyond 2^32 pages), and stay allocated. Read them
 * with page_set_span(). A file has at most SESSION_MAX_FILE_RANGES ranges, so at most as many spans: the
 * array is searched by bisection, and an insertion moves at most that many spans (64 KiB), once per range. */
typedef struct PageSet {
        union {
                PageSpan *spans;        /* allocated > 0 */
                struct {
                        uint32_t first, n;
                } one;                  /* allocated == 0 and n == 1 */
        };
        uint16_t n, allocated;
        uint32_t ranges;                /* the file's ranges in touches */
} PageSet;

static inline PageSpan page_set_span(const PageSet *f, uint32_t i) {
        return f->allocated > 0 ? f->spans[i] : (PageSpan) { f->one.first, f->one.n };
}

/* Pages of one file first read together: the session's touches, in first-touch order. A run longer than
 * UINT32_MAX pages is cut into several. */
typedef struct SessionRange {
        uint32_t file;          /* index into Session.files */
        uint32_t n_pages;
        uint64_t first_page;    /* PAGE_SIZE units */
        uint64_t offset_usec;   /* first touch, relative to the session start */
} SessionRange;

/* Pages of a filesystem's block device first read together (its metadata: inode tables, directories,
 * extent blocks, bitmaps), in first-touch order. Never relocated: kept for prefetching. */
typedef struct SessionMetaRange {
        uint64_t fsid;          /* the filesystem (FileKey.fsid) */
        uint64_t first_page;    /* PAGE_SIZE units of the device: its byte offset / PAGE_SIZE */
        uint64_t n_pages;
        uint64_t offset_usec;   /* first touch, relative to the session start */
} SessionMetaRange;

/* A session keeps at most this many metadata ranges (2 MiB); later metadata events are counted only. */
#define SESSION_MAX_META_RANGES 65536

/* Page ranges: a session keeps at most max_ranges of them, at most SESSION_MAX_FILE_RANGES of one file;
 * pages that would start a range past either are counted in skipped_pages only, and the session is
 * incomplete. A launch keeps SESSION_MAX_LAUNCH_RANGES (18 times what Chromium's start read; storing and
 * merging that many held the main loop 0.2-0.25 s), the boot SESSION_MAX_RANGES, or MaxSessionFiles= if
 * that is more, so that a boot of that many files read in one piece each fits (1.5 MiB while recording and
 * about 3 MiB in the database for 65,536). A start that reads one file in more than 4,096 pieces (each at
 * least SESSION_RANGE_JOIN_PAGES apart) is not one a layout could serve much better anyway. */
#define SESSION_MAX_RANGES 65536
#define SESSION_MAX_LAUNCH_RANGES 16384
#define SESSION_MAX_FILE_RANGES 4096

/* A session's max_ranges, for its kind and max_files (MaxSessionFiles=, 0: no limit). */
static inline size_t session_max_ranges(ProfileKind kind, size_t max_files) {
        if (kind != PROFILE_BOOT)
                return SESSION_MAX_LAUNCH_RANGES;
        return max_files == 0 ? 0 : MAX((size_t) SESSION_MAX_RANGES, max_files);
}

/* New pages of the file of the session's last range, less than this many pages before its start or after
 * its end (the pages between in no range yet), join that range: under 64 KiB with 4 KiB pages, the gap the
 * planner reads over rather than seek (HOT_RANGE_GAP), so a file read in strides is one range. */
#define SESSION_RANGE_JOIN_PAGES 16

/* A page event's inode resolved for this session: the file's index, or SESSION_INODE_LEFT_OUT. Page
 * events are taken on ext4 only (32-bit inode numbers, page-files.c), and a dev_t of Linux fits 32 bits
 * (12-bit major, 20-bit minor). */
#define SESSION_INODE_LEFT_OUT UINT32_MAX
/* left out for the boot session's share of users (boot-share.h): no obstacle to a system process's read */
#define SESSION_INODE_USERS_FULL (UINT32_MAX - 2)
typedef struct SessionInode {
        uint32_t ino;
        uint32_t file;          /* kept as file ^ (UINT32_MAX - 1), no file's index: 0 is an empty bucket */
} SessionInode;

/* The inodes of one filesystem (a session sees a few). */
typedef struct SessionInodes {
        uint32_t dev;
        SessionInode *t;        /* open addressing */
        size_t n_buckets, n;
} SessionInodes;

/* Where the session's paths live: each directory once (dirs, back to back, with a hash index), each
 * path as its directory's place and its last component (names, back to back). Paths of a boot share few
 * directories: 100,000 files of the memory benchmark take 13 B each instead of 45. */
typedef struct PathStore {
        char *dirs;             /* "dir\0" ... */
        size_t n_dirs_bytes, allocated_dirs_bytes;
        uint32_t *dir_index;    /* open addressing: place in dirs + 1, 0 = empty */
        size_t n_dir_buckets, n_dirs;
        char *names;            /* { uint32_t dir place (UINT32_MAX: none), "name\0" } ... */
        size_t n_names_bytes, allocated_names_bytes;
} PathStore;

typedef struct Session Session;
struct Session {
        ProfileKind kind;
        char *profile;          /* "boot" or the executable's absolute path */
        uint64_t start_usec;    /* CLOCK_MONOTONIC */
        uint64_t start_realtime_usec;
        uint64_t deadline_usec; /* CLOCK_MONOTONIC: the window closes here */
        pid_t root_pid;         /* launch: the exec'ing process */
        uint32_t watch_tag;     /* launch: its processes' tag in the BPF page recorder; 0: not watched */
        uint64_t pages_read;    /* BPF: pages its processes read from the disk (inserted into the cache) */
        uint64_t pages_used;    /* BPF: pages they used, cached or not (reads, faults, fault-around) */
        bool prefetched;        /* its profile was prefetched for it: at a launch's exec, as the boot began
                                 * (stored as such: profile.c, db_add_session()) */
        bool uses;              /* its page events include the pages used that were cached: what it saw
                                 * is what was read, whatever the page cache held */
        uid_t uid;              /* launch: its real uid at the exec (UID_INVALID: unknown); boot: 0 */
        char *cgroup;           /* launch: its app-*.scope/.service cgroup on desktops, else NULL */
        bool incomplete;        /* events were lost (queue overflow) or cut short */
        size_t max_files;       /* MaxSessionFiles=: takes no more files than this; 0 = no limit */
        bool full;              /* a file was left out for max_files (the session is incomplete too) */
        size_t max_ranges;      /* page ranges kept at most (session_max_ranges()); 0 = no limit */
        bool ranges_full;       /* pages were left out for max_ranges or SESSION_MAX_FILE_RANGES (and the
                                 * session is incomplete) */
        uint64_t skipped_pages; /* how many */

        SessionFile *files;
        size_t n_files, allocated;
        uint32_t *index;        /* open addressing, any size: file index + 1, 0 = empty */
        size_t n_buckets;
        size_t n_resolved;      /* files[0..n_resolved) had their path resolution attempted */

        PageSet *seen;          /* per file, for files[0..n_seen_files): kept apart, as most files have none */
        size_t n_seen_files, allocated_seen;
        SessionRange *touches;  /* ranges in first-touch order, interleaved across files */
        size_t n_touches, allocated_touches;
        bool pages;             /* the session was recorded with page events (else files only, whole) */
        bool sealed;            /* session_seal(): read only */
        uint64_t lost_pages;    /* page events lost while it was open (it is then incomplete too) */
        uint64_t page_events;   /* page events taken (its files' and the metadata's) */
        SessionMetaRange *meta; /* block-device pages, in first-touch order */
        size_t n_meta, allocated_meta;
        uint64_t skipped_metadata; /* block-device page events not kept: past SESSION_MAX_META_RANGES */
        SessionInodes *inodes;  /* (dev, ino) of page events -> file, per dev */
        size_t n_inode_devs, allocated_inode_devs, n_inodes;
        PathStore paths;

        Session *next;
};

int session_new(ProfileKind kind, const char *profile, uint64_t now_usec, uint64_t window_usec, Session **ret);
Session *session_free(Session *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Session *, session_free);

/* Returns 1 if the file was new to the session, 0 if already there or left out because the session holds
 * max_files already (which marks it full and incomplete), -ENOMEM. */
int session_add(Session *s, const FileKey *key, uint64_t now_usec);
bool session_contains(const Session *s, const FileKey *key);
/* Names files[file] with a copy of path (NULL: none), kept in the session's path store. 0, -ENOMEM, or
 * -EFBIG when the store has no room left (4 GiB). */
int session_set_path(Session *s, size_t file, const char *path);
/* A copy of files[file]'s path, or NULL (none, or no memory). */
char *session_path(const Session *s, size_t file);
/* session_add() and, when dir and name are given, keeps them for the file (what a fanotify event gives),
 * unless it is named already or has a place: the first read's is kept. Returns what session_add() does;
 * a bad name (empty, or with a '/') is not kept, silently. */
int session_add_where(Session *s, const FileKey *key, uint64_t now_usec, const FileKey *dir, const char *name);
/* The file's index in files, or -ENOENT. */
ssize_t session_index(const Session *s, const FileKey *key);

/* Pages [first, first + n) of files[file] were read at now_usec (CLOCK_MONOTONIC). Pages the file already has
 * are cut out (a page read again after eviction is not a new touch); a piece of the file of the session's
 * last range that starts less than SESSION_RANGE_JOIN_PAGES after its end or ends as few before its start,
 * none of the pages between in another range, extends it over them, keeping its first-touch time; any
 * other piece becomes a new range at the end of touches, unless the caps are reached (then it is counted
 * in skipped_pages). O(log n) in the file's ranges, plus the pieces of the event. Returns the number of new
 * pages kept, -EINVAL if the pages end past 2^64, or -ENOMEM. */
int session_add_pages(Session *s, uint32_t file, uint64_t first, uint64_t n, uint64_t now_usec);

/* Pages [first, first + n) of the block device of the filesystem `fsid` were read at now_usec: extend the
 * last metadata range when they start in it or right after it on the same filesystem (nothing new when it
 * holds them already), else become a new range. Returns 1 if kept, 0 if counted in skipped_metadata (the session
 * holds SESSION_MAX_META_RANGES already), -EINVAL for n == 0, -ENOMEM. */
int session_add_metadata(Session *s, uint64_t fsid, uint64_t first, uint64_t n, uint64_t now_usec);

/* The page events' inode cache: the file (dev, ino) resolved to, SESSION_INODE_LEFT_OUT, or -ENOENT when
 * not resolved yet for this session. */
int session_inode_get(const Session *s, uint64_t dev, uint64_t ino, uint32_t *ret);
/* -EINVAL for dev 0, -EOVERFLOW for a dev or inode number beyond 32 bits (not kept: page events are
 * taken for 32-bit inode numbers only). */
int session_inode_put(Session *s, uint64_t dev, uint64_t ino, uint32_t file);

/* The window closed: frees what only recording uses (the key index, the inode cache, the page sets),
 * keeping files, paths and touches for storing. Nothing may be added after. */
void session_seal(Session *s);

/* Approximate heap bytes held, for status and the memory benchmark. */
size_t session_memory(const Session *s);
