/* Starting a program's ranks (external_ranks.h). World size 1 is the
 * program itself with RANK=0, WORLD_SIZE=1 and a master address and port:
 * a DistributedDataParallel program runs unchanged as one process. Above
 * 1 it is Open MPI's mpirun, as for repro's own ranks (cli/run_ranks.c):
 * `mpirun -np N sh -c WRAPPER sh PROGRAM ARGS...`, the wrapper setting
 * RANK, LOCAL_RANK and REPRO_RANK from OMPI_COMM_WORLD_RANK and
 * OMPI_COMM_WORLD_LOCAL_RANK before it execs the program (the same pid:
 * the rank watch still finds it), and REPRO_TRACE="" on ranks above 0, so
 * that only rank 0 writes the trace whatever records it. A wrapper rather
 * than each client reading OMPI_*: a C program, or a Python program
 * before it imports repro, gets the protocol as torchrun would give it.
 *
 * Ranks are in process groups of their own (mpirun makes them), so the
 * child layer's group kill would reach mpirun alone: the timeout and the
 * wait for ranks left behind are kept here, stopping the job with SIGTERM
 * to mpirun (which passes it on) and, 3 s later, SIGKILL to every rank. */
#include "analysis/external_ranks.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/cpus.h"
#include "util/error.h"
#include "util/numparse.h"
#include "util/progress.h"
#include "util/rank_watch.h"

enum { PORT_TRIES = 3, STOP_GRACE_S = 3, RANK_WAIT_DEFAULT_S = 30 };

/* The value of --ranks N or of --set KEY=N for KEY ranks or train.ranks,
 * else 0. */
static int ranks_option(const char *flag, const char *value)
{
    if (!strcmp(flag, "--ranks"))
        return atoi(value);
    if (strcmp(flag, "--set"))
        return 0;
    if (!strncmp(value, "ranks=", 6))
        return atoi(value + 6);
    if (!strncmp(value, "train.ranks=", 12))
        return atoi(value + 12);
    return 0;
}

/* The same for --tp N, --set tp=N or parallel.tp=N. */
static int tp_option(const char *flag, const char *value)
{
    if (!strcmp(flag, "--tp"))
        return atoi(value);
    if (strcmp(flag, "--set"))
        return 0;
    if (!strncmp(value, "tp=", 3))
        return atoi(value + 3);
    if (!strncmp(value, "parallel.tp=", 12))
        return atoi(value + 12);
    return 0;
}

/* The last value of `option` among the pass-through options, then the
 * run's own; 1 when none. */
static int run_count(const repro_multirun *m, int idx, int (*option)(const char *, const char *))
{
    int count = 1;
    for (int i = 0; i + 1 < m->npass; i += 2) {
        int r = option(m->pass[i], m->pass[i + 1]);
        count = r > 0 ? r : count;
    }
    const repro_run_plan *p = &m->plan[idx];
    int own = p->extra[0][0] ? option(p->extra[0], p->extra[1]) : 0;
    return own > 0 ? own : count;
}

int repro_external_tp(const repro_multirun *m, int idx) { return run_count(m, idx, tp_option); }

int repro_external_ranks(const repro_multirun *m, int idx)
{
    return run_count(m, idx, ranks_option) * repro_external_tp(m, idx);
}

int repro_external_dist_env(int ranks, int tp, repro_env_pair kv[REPRO_DIST_ENV_MAX])
{
    int n = 0;
    kv[n].key = "REPRO_TP";
    snprintf(kv[n++].value, sizeof kv[0].value, "%d", tp);
    static const char *const sized[] = {"WORLD_SIZE", "REPRO_WORLD_SIZE"};
    for (int i = 0; i < 2; i++) {
        kv[n].key = sized[i];
        snprintf(kv[n++].value, sizeof kv[0].value, "%d", ranks);
    }
    kv[n].key = "MASTER_ADDR";
    snprintf(kv[n++].value, sizeof kv[0].value, "127.0.0.1");
    static const char *const ranked[] = {"RANK", "LOCAL_RANK", "REPRO_RANK", "REPRO_TP_RANK"};
    for (int i = 0; ranks == 1 && i < 4; i++) {
        kv[n].key = ranked[i];
        snprintf(kv[n++].value, sizeof kv[0].value, "0");
    }
    return n;
}

/* ---- the master port -------------------------------------------------------- */

/* Whether `port` can be bound on every address now (0: let the kernel
 * choose): the bound port, or 0 when it is taken. */
static int bind_port(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons((uint16_t)port);
    socklen_t len = sizeof a;
    int got = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        got = ntohs(a.sin_port);
    close(fd);
    return got;
}

/* The port for this try: $REPRO_MASTER_PORT first when it is free, else
 * one the kernel says is free. */
static int choose_port(int try)
{
    const char *want = getenv("REPRO_MASTER_PORT");
    long p;
    if (try == 0 && want && !repro_parse_count("REPRO_MASTER_PORT", want, 1, 65535, &p) &&
        bind_port((int)p))
        return (int)p;
    repro_error_clear();
    return bind_port(0);
}

/* Whether a failed run's stderr says its port was taken (the race between
 * choosing it and the program binding it). */
static int port_was_taken(const char *err_path)
{
    FILE *f = fopen(err_path, "r");
    char line[1024];
    int taken = 0;
    while (f && !taken && fgets(line, sizeof line, f))
        taken = strstr(line, "Address already in use") || strstr(line, "EADDRINUSE");
    if (f)
        fclose(f);
    return taken;
}

/* c's environment plus the variables in add (NULL-terminated), malloc'd. */
static const char **env_with(const char *const *env, const char *const *add)
{
    size_t n = 0, k = 0;
    while (env && env[n])
        n++;
    while (add[k])
        k++;
    const char **out = calloc(n + k + 1, sizeof *out);
    if (!out)
        return NULL;
    memcpy(out, env, n * sizeof *out);
    memcpy(out + n, add, k * sizeof *out);
    return out;
}

/* ---- N ranks through mpirun --------------------------------------------------- */

static const char wrapper[] =
    "export RANK=\"$OMPI_COMM_WORLD_RANK\" LOCAL_RANK=\"$OMPI_COMM_WORLD_LOCAL_RANK\" "
    "REPRO_RANK=\"$OMPI_COMM_WORLD_RANK\" "
    "REPRO_TP_RANK=\"$((OMPI_COMM_WORLD_RANK % ${REPRO_TP:-1}))\"; "
    "[ \"$OMPI_COMM_WORLD_RANK\" = 0 ] || export REPRO_TRACE=; exec \"$@\"";

/* mpirun's argument vector for the program (malloc'd; the strings are
 * borrowed, np and outdir the caller's). */
static char **mpirun_argv(char *const *cmd, int ranks, char *np, char *outdir)
{
    size_t ncmd = 0;
    while (cmd[ncmd])
        ncmd++;
    char **argv = calloc(ncmd + 20, sizeof *argv);
    if (!argv)
        return NULL;
    int n = 0;
    argv[n++] = "mpirun"; /* not --quiet: its banner names the rank that failed */
    if (geteuid() == 0)
        argv[n++] = "--allow-run-as-root";
    if (ranks > repro_cpus_available())
        argv[n++] = "--oversubscribe";
    argv[n++] = "--bind-to";
    argv[n++] = "none";
    argv[n++] = "-np";
    argv[n++] = np;
    argv[n++] = "--output-filename"; /* dir/ranks/1/rank.R/{stdout,stderr} */
    argv[n++] = outdir;
    argv[n++] = "/bin/sh";
    argv[n++] = "-c";
    argv[n++] = (char *)wrapper;
    argv[n++] = "sh";
    for (size_t i = 0; i < ncmd; i++)
        argv[n++] = cmd[i];
    return argv;
}

/* The job while it runs: its ranks, and the stops this file makes. */
typedef struct {
    repro_rank_watch w;
    double started, timeout_s, rank_wait_s;
    double stop_at;     /* when the job was told to stop (0: not) */
    int timed_out;      /* stopped at the run's --timeout */
    int left_behind;    /* stopped: a rank ended and the others did not */
    int killed;         /* SIGKILL sent after the grace */
} job_watch;

static void stop_job(job_watch *j, double now)
{
    j->stop_at = now;
    repro_child_kill(j->w.job, SIGTERM); /* mpirun passes it to every rank */
}

/* Every tick: the ranks, the run's timeout, a rank that left the others
 * waiting, and SIGKILL to whatever a stop left after its grace. */
static void job_tick(void *arg)
{
    job_watch *j = arg;
    repro_rank_watch_tick(&j->w);
    double now = repro_now();
    if (!j->stop_at && j->timeout_s > 0 && now - j->started > j->timeout_s) {
        j->timed_out = 1;
        stop_job(j, now);
    }
    if (!j->stop_at && j->w.first_gone >= 0 && now - j->w.first_gone_at > j->rank_wait_s) {
        j->left_behind = 1;
        stop_job(j, now);
    }
    if (j->stop_at && !j->killed && now - j->stop_at > STOP_GRACE_S) {
        j->killed = 1;
        for (int r = 0; r < j->w.ranks; r++)
            if (j->w.pid[r])
                kill(j->w.pid[r], SIGKILL);
        repro_child_kill(j->w.job, SIGKILL);
    }
}

/* $REPRO_RANK_WAIT: whole seconds the other ranks may run on after one
 * ended (default 30). 0, or -1 (error slot) when malformed. */
static int rank_wait(double *out)
{
    const char *v = getenv("REPRO_RANK_WAIT");
    long s = RANK_WAIT_DEFAULT_S;
    if (v && repro_parse_count("REPRO_RANK_WAIT", v, 1, 7 * 24 * 3600, &s))
        return -1;
    *out = (double)s;
    return 0;
}

/* Rank r's stderr under dir/ranks/ (mpirun names the job's folder). */
static void rank_stderr(const char *dir, int r, char *buf, size_t len)
{
    char ranks[1300];
    snprintf(ranks, sizeof ranks, "%s/ranks", dir);
    DIR *d = opendir(ranks);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(buf, len, "%s/%.64s/rank.%d/stderr", ranks, e->d_name, r);
        if (access(buf, R_OK) == 0)
            break;
    }
    if (d)
        closedir(d);
}

/* The rank mpirun's banner names as the first to fail, and how ("mpirun
 * noticed that process rank 1 with PID 0 on node x exited on signal 9",
 * or "The first process to do so was: Process name: [[J,1],1] Exit code:
 * 4"): the rank, or -1 when its stderr (err_path) names none. */
static int mpirun_names(const char *err_path, repro_child_status *how)
{
    FILE *f = fopen(err_path, "r");
    char line[1024];
    int rank = -1, a, b, r, code;
    while (f && rank < 0 && fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "noticed that process rank ");
        if (p && sscanf(p, "noticed that process rank %d", &r) == 1 &&
            (p = strstr(p, "on signal ")) && sscanf(p, "on signal %d", &code) == 1) {
            rank = r;
            *how = (repro_child_status){REPRO_CHILD_SIGNALED, code};
        } else if ((p = strstr(line, "Process name: [[")) &&
                   sscanf(p, "Process name: [[%d,%d],%d]", &a, &b, &r) == 3 &&
                   fgets(line, sizeof line, f) && (p = strstr(line, "Exit code:")) &&
                   sscanf(p, "Exit code: %d", &code) == 1) {
            rank = r;
            *how = (repro_child_status){REPRO_CHILD_EXITED, code};
        }
    }
    if (f)
        fclose(f);
    return rank;
}

/* What ended the job, when a rank did: why, and that rank's stderr (err
 * is mpirun's own on entry). mpirun's banner says which rank failed
 * first; the rank watch is the fallback, and says which ended first when
 * the others were left waiting. */
static void explain_job(const job_watch *j, const repro_child_status *st, const char *dir,
                        char *why, size_t why_len, char *err, size_t err_len)
{
    repro_child_status rs = repro_rank_watch_status(&j->w, st);
    int r = j->left_behind ? -1 : mpirun_names(err, &rs);
    if (r < 0 || r >= j->w.ranks) {
        r = j->w.first_gone;
        rs = repro_rank_watch_status(&j->w, st);
    }
    if (r >= 0)
        rank_stderr(dir, r, err, err_len);
    char how[96], who[64];
    repro_child_status_text(&rs, NULL, how, sizeof how);
    if (j->left_behind && j->w.status < 0) /* gone before a tick saw its status */
        snprintf(how, sizeof how, "ended");
    if (r >= 0)
        snprintf(who, sizeof who, "rank %d of %d", r, j->w.ranks);
    else
        snprintf(who, sizeof who, "a rank of %d", j->w.ranks);
    if (j->left_behind)
        snprintf(why, why_len,
                 "%s %s while the others ran on for %.0f s (REPRO_RANK_WAIT): a rank that ends "
                 "before forming the process group, or before the others' last collective, "
                 "leaves them waiting (torch's own timeout for forming the group is 30 "
                 "minutes), so repro stopped the job",
                 who, how, j->rank_wait_s);
    else if (j->timed_out)
        snprintf(why, why_len, "its %d ranks timed out after %.0f s", j->w.ranks, j->timeout_s);
    else
        snprintf(why, why_len, "%s %s%s, and mpirun stopped the other ranks", who,
                 rs.how == REPRO_CHILD_SIGNALED ? "was " : "", how);
}

static int launch_mpirun(const repro_multirun *m, int idx, const char *dir, repro_child *c,
                         repro_child_status *st, char *why, size_t why_len, char *err,
                         size_t err_len)
{
    int ranks = repro_external_ranks(m, idx);
    char np[16], outdir[1300];
    snprintf(np, sizeof np, "%d", ranks);
    snprintf(outdir, sizeof outdir, "%s/ranks", dir);
    job_watch j;
    memset(&j, 0, sizeof j);
    if (rank_wait(&j.rank_wait_s) || repro_rank_watch_init(&j.w, c, ranks))
        return -1;
    char *const *cmd = c->argv;
    char **argv = mpirun_argv(cmd, ranks, np, outdir);
    if (!argv) {
        repro_rank_watch_release(&j.w);
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    }
    c->argv = argv;
    j.timeout_s = c->timeout_s;
    c->timeout_s = 0; /* kept here: see the top of the file */
    c->tick = job_tick;
    c->tick_arg = &j;
    j.started = repro_now();
    int rc = repro_child_run(c, st);
    c->argv = cmd;
    free(argv);
    if (rc)
        repro_error_wrap(REPRO_EIO, "%s: %d ranks need Open MPI's mpirun (Debian: openmpi-bin)",
                         m->plan[idx].label, ranks);
    else if (st->how != REPRO_CHILD_EXITED || st->code != 0 || j.stop_at) {
        if (!j.left_behind)
            repro_rank_watch_settle(&j.w, st);
        explain_job(&j, st, dir, why, why_len, err, err_len);
    }
    repro_rank_watch_release(&j.w);
    return rc;
}

int repro_external_launch(const repro_multirun *m, int idx, const char *dir, repro_child *c,
                          repro_child_status *st, char *why, size_t why_len, char *err_path,
                          size_t err_len)
{
    why[0] = '\0';
    int ranks = repro_external_ranks(m, idx);
    const char *const *env = c->env_set;
    char port[32], rank0_err[1400];
    const char *add[] = {port, "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
                         NULL};
    int rc = 0;
    for (int try = 0; try < PORT_TRIES; try++) {
        snprintf(port, sizeof port, "MASTER_PORT=%d", choose_port(try));
        const char **with = env_with(env, add);
        if (!with)
            return repro_error_set(REPRO_ENOMEM, "out of memory");
        c->env_set = with;
        rc = ranks > 1 ? launch_mpirun(m, idx, dir, c, st, why, why_len, err_path, err_len)
                       : repro_child_run(c, st);
        c->env_set = env;
        free(with);
        snprintf(rank0_err, sizeof rank0_err, "%s", err_path);
        if (ranks > 1)
            rank_stderr(dir, 0, rank0_err, sizeof rank0_err);
        if (rc || (st->how == REPRO_CHILD_EXITED && st->code == 0) ||
            !port_was_taken(rank0_err))
            break;
        why[0] = '\0'; /* the port was taken: again, on another */
    }
    return rc;
}

/* ---- the report ------------------------------------------------------------------ */

int repro_external_ranks_cause(const repro_multirun *m, FILE *out)
{
    for (int i = 1; m->cmd && i < m->nplan && i < m->ntraces; i++) {
        const repro_divergence *d = &m->divs[i];
        if (strcmp(m->plan[i].scope, "world size") || d->identical || d->ntensors == 0 ||
            strncmp(d->tensors[0].name, "grad", 4))
            continue;
        fprintf(out,
                "cause: %s is a gradient, and the world size changes how a data-parallel "
                "gradient is summed: DistributedDataParallel has every rank take the mean loss "
                "over its own block of the batch and averages the blocks' gradients with an "
                "all-reduce (Gloo's or NCCL's ring), whose order of additions depends on the "
                "number of ranks, so 1, 2 and 4 ranks round differently. repro.ddp."
                "InvariantGradients cuts the batch into fixed shards and adds every shard's "
                "gradient in one fixed order on every rank (docs/python.md, Data parallel)\n",
                d->tensors[0].name);
        return 1;
    }
    return 0;
}
