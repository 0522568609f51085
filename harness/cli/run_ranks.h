/* `repro run` across ranks: starting the MPI job (run_ranks.c). */
#ifndef REPRO_RUN_RANKS_H
#define REPRO_RUN_RANKS_H

/* Runs `mpirun -np ranks <this repro> run args[1..argc-1]` with our stdout
 * and stderr, forwarding SIGINT/SIGTERM, and returns its exit status (exit
 * 3 when mpirun cannot be started). */
int repro_run_launch_ranks(int ranks, int argc, char **args);
/* The same for another command (`repro screen`): `mpirun -np ranks <this
 * repro> cmd args[1..argc-1]`. */
int repro_launch_ranks(const char *cmd, int ranks, int argc, char **args);

#endif
