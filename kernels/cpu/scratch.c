/* Per-thread kernel scratch (scratch.h): thread-local slots, freed by a
 * pthread key destructor when the thread exits. */
#include "scratch.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct {
    float *p[REPRO_SCRATCH_NSLOTS];
    size_t cap[REPRO_SCRATCH_NSLOTS];
} slots;

static pthread_key_t key;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void free_slots(void *v)
{
    slots *s = v;
    for (int i = 0; i < REPRO_SCRATCH_NSLOTS; i++)
        free(s->p[i]);
    free(s);
}

static void make_key(void)
{
    pthread_key_create(&key, free_slots);
}

float *repro_scratch(int slot, size_t floats)
{
    pthread_once(&once, make_key);
    slots *s = pthread_getspecific(key);
    if (!s) {
        if (!(s = calloc(1, sizeof *s)) || pthread_setspecific(key, s)) {
            free(s);
            return NULL;
        }
    }
    if (s->cap[slot] < floats || !s->p[slot]) {
        void *p = NULL;
        /* a little slack: vector loads of a row's last lanes may read past it */
        size_t bytes = (floats + 64) * sizeof(float);
        if (posix_memalign(&p, 64, bytes))
            return NULL;
        free(s->p[slot]);
        s->p[slot] = p;
        s->cap[slot] = floats;
    }
    return s->p[slot];
}
