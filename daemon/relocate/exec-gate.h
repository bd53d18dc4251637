/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "relocate/mover.h"
#include "record/recorder.h"

/* The mover's exec gate (mover.h) over a recorder's exec thread (recorder.h, "Holding execs"): the daemon's
 * own recorder for its runs, a recorder of its own for the early pass. Call recorder_gate_begin() before
 * the run and recorder_gate_end() after it. */
MoverExecGate exec_gate_of(Recorder *r);
