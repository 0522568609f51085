/* A stand-in for the CUDA backend on the CPU, for the GPU check's own
 * test: tests/gpu/check_cuda_ops.c built with -DREPRO_GPU_FAKE_DEVICE
 * (make gpu-fake) runs every check against it on any machine, and
 * tests/gpu/selftest.sh plants one fault at a time (REPRO_GPU_FAKE_FAULT)
 * to prove that the check fails on it, naming it. See fake_device.c. */
#ifndef REPRO_GPU_FAKE_DEVICE_H
#define REPRO_GPU_FAKE_DEVICE_H

#include <stddef.h>

#include "kernels/backend.h"

/* The CPU backend's table with the device's conv-algorithm entries
 * replaced (stand-in cuDNN algorithms) and the fault of
 * $REPRO_GPU_FAKE_FAULT planted. */
const repro_backend *repro_gpu_fake_device(void);
/* As repro_cuda_cudnn_report: the stand-in's results for s, admitted or
 * dropped by kernels/cuda/cudnn_admit.h's rule. */
int repro_gpu_fake_cudnn_report(void *ctx, const repro_conv_shape *s, char *buf, size_t len);
/* 0 when $REPRO_GPU_FAKE_NO_POISON is set: the check then leaves output
 * buffers as they are, to show that poisoning is what catches an unwritten
 * one (the negative control of the poison). */
int repro_gpu_fake_poison_on(void);

#endif
