/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdatomic.h>
#include <stdint.h>

/* What ends the early-boot pass before its queue is done: its budget (EarlyBudgetSec=), measured on
 * CLOCK_BOOTTIME, and SIGTERM or SIGINT. A thread watches both and sets the mover's cancel flag, which the
 * mover looks at between files (and between 8 MiB steps of a big file); the pass checkpoints what it did
 * not reach as waiting for the next boot. CLOCK_BOOTTIME, not CLOCK_REALTIME: the wall clock is set from
 * the RTC and by NTP early in the boot, and a step would cut the budget short or stretch it without end;
 * not CLOCK_MONOTONIC: a suspend during the pass counts as time spent, so a resume never finds the pass
 * with budget left that it took before the suspend. */
typedef struct EarlyStop EarlyStop;

/* Starts watching: *cancel is set at once when budget_usec is 0, else when the budget is spent, at the first
 * SIGTERM or SIGINT (also one that came before: they are blocked in the calling thread, and must be in every
 * other thread of the process: seeklessd blocks them before it starts any), or when watching fails. */
int early_stop_start(uint64_t budget_usec, atomic_bool *cancel, EarlyStop **ret);

/* The signal that stopped the pass (SIGTERM, SIGINT), or 0. s may be NULL. */
int early_stop_signal(EarlyStop *s);

/* Stops watching; returns NULL. */
EarlyStop *early_stop_free(EarlyStop *s);
