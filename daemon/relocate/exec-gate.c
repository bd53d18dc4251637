/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "relocate/exec-gate.h"

static int gate_hold(void *userdata, const FileKey *key, int fd) {
        return recorder_hold_execs(userdata, key, fd);
}

static bool gate_waiting(void *userdata, const FileKey *key) {
        return recorder_execs_waiting(userdata, key);
}

static void gate_release(void *userdata, const FileKey *key) {
        recorder_release_execs(userdata, key);
}

MoverExecGate exec_gate_of(Recorder *r) {
        return (MoverExecGate) {
                .hold = gate_hold,
                .waiting = gate_waiting,
                .release = gate_release,
                .userdata = r,
        };
}
