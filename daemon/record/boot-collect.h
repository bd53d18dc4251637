/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "fs/mounts.h"
#include "record/session.h"

/* The boot collector (seekless-boot-collector, run by PID 1 as a systemd generator) watches the reads of
 * the boot from before PID 1 loads its units until seeklessd takes over. It leaves in its run directory
 * (/run/seekless):
 *   boot-collector.pid   its pid while it runs
 *   boot-collector.started  created once per boot (generators run again on every daemon-reload)
 *   boot-collector.exclude  created empty when it starts, removed when it stops: every seeklessd process
 *                        (the daemon, the early pass) appends its pid ("PID\n") before it reads any file,
 *                        and the collector leaves out the reads of the pids listed. By pid, not by the
 *                        process's name: a short-lived process (the early pass) may be gone by the time
 *                        the collector takes its reads from the queue.
 *   boot-collector.keys  when it has stopped: BOOT_COLLECT_MAGIC, then one line per file in the order of
 *                        its first read, "FSID HANDLE_TYPE HANDLE [PATH]" (fsid as 16 hex digits, handle
 *                        type in decimal, handle bytes in hex, the path the file had right after that read
 *                        with "\\n" for a newline and "\\\\" for a backslash, if it could be named), then
 *                        "end N" with N the number of files.
 * The path matters: remounting / read-write (systemd-remount-fs) drops the unused dentries, so a handle
 * opened later gives a disconnected file that can't be named any more.
 * The file is written to a temporary name and renamed, so it is either whole or absent. */
#define BOOT_COLLECT_PID_FILE "boot-collector.pid"
#define BOOT_COLLECT_KEYS_FILE "boot-collector.keys"
#define BOOT_COLLECT_STARTED_FILE "boot-collector.started"
#define BOOT_COLLECT_EXCLUDE_FILE "boot-collector.exclude"
#define BOOT_COLLECT_MAGIC "seekless-boot-collector 1\n"
#define BOOT_COLLECT_COMM "seekless-boot-c"     /* the program's name as the kernel keeps it (15 bytes) */

/* Ask a running collector to stop (SIGTERM through a pidfd, only if the pid is still the collector) and
 * wait up to timeout_usec for it to exit. Returns 1 if it stopped, 0 if none was running, -ETIMEDOUT if it
 * did not exit in time, other negative errno on failure. */
int boot_collect_stop(const char *run_dir, uint64_t timeout_usec);

/* Add the files in the collector's keys file to the session, in order, keeping those on the watched
 * filesystems; the file is removed afterwards. Returns the number of files new to the session, 0 if there
 * is no file, -EBADMSG if it is not a complete keys file (removed too), other negative errno on failure. */
int boot_collect_take(const char *run_dir, Session *s, const FilesystemList *watched, uint64_t now_usec);

/* Ask a running collector to leave out this process's reads: append our pid to its exclude file, if there
 * is one (there is none when no collector runs; it is never created here). Call before reading any file.
 * Returns 1 if listed, 0 if no collector runs, negative errno on failure. */
int boot_collect_exclude_self(const char *run_dir);

/* Whether the exclude file open at fd lists pid. */
bool boot_collect_pid_listed(int fd, pid_t pid);

/* Parse one record line into a key and its path (NULL if the line has none; ret_path may be NULL).
 * Returns 0, -EBADMSG or -ENOMEM. */
int boot_collect_parse_line(const char *line, FileKey *ret, char **ret_path);

/* Escape a path for a record line (the inverse of the parser's unescaping). */
char *boot_collect_escape_path(const char *path);
