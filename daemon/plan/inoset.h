/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Files MOVE_EXT cannot take while they are in use: the executables of running processes (opening them
 * for writing gives ETXTBSY) and active swap files. A set of (dev, ino) pairs; small, searched linearly. */
typedef struct InoSet {
        dev_t *dev;
        ino_t *ino;
        size_t n, allocated_dev, allocated_ino;
} InoSet;

void ino_set_add(InoSet *s, dev_t dev, ino_t ino);
bool ino_set_has(const InoSet *s, dev_t dev, ino_t ino);
void ino_set_done(InoSet *s);

/* Adds the executable of every process in /proc (what each /proc/PID/exe names). */
void ino_set_add_running_executables(InoSet *s);
/* Adds every regular file /proc/swaps lists. */
void ino_set_add_swap_files(InoSet *s);
