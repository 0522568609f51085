/* repro's own version: part of every environment fingerprint. */
#ifndef REPRO_VERSION_H
#define REPRO_VERSION_H
#define REPRO_VERSION "0.1.0"
#endif
