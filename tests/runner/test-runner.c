/* SPDX-License-Identifier: GPL-3.0-or-later */
/* kill () under -std=c17 */
#define _POSIX_C_SOURCE 200809L

#include "config.h"

#include <dlfcn.h>
#include <signal.h>
#include <sys/resource.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/wait.h>

#include "napkin-file.h"
#include "napkin-json-private.h"
#include "napkin-run-job.h"

/* Tests of the run job use a test double for napkin-runner (fake-runner.sh);
 * the real runner is exercised where the machine has no GPU: it must say so. */

typedef struct
{
  GMainLoop   *loop;
  json_object *result;
  GError      *error;
  double       last_fraction;
  guint        messages;
} Wait;

static void
done_cb (GObject      *object,
         GAsyncResult *result,
         gpointer      user_data)
{
  Wait *w = user_data;

  w->result = napkin_run_job_run_finish (NAPKIN_RUN_JOB (object), result, &w->error);
  g_main_loop_quit (w->loop);
}

static void
message_cb (NapkinRunJob *job,
            GParamSpec   *pspec,
            Wait         *w)
{
  w->messages++;
  w->last_fraction = napkin_run_job_get_fraction (job);
}

static NapkinDiagram *
example (const char *file)
{
  g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), file, NULL);
  g_autoptr(GError) error = NULL;
  NapkinDiagram *d = napkin_diagram_load_from_file (path, NAPKIN_LOAD_VALIDATE, &error);

  g_assert_no_error (error);
  return d;
}

static NapkinRunJob *
fake_job (const char *mode)
{
  g_autoptr(NapkinDiagram) d = example ("softmax.napkin");
  const char *argv[] = { "--repeats=7", NULL };
  const char *runner[] = { FAKE_RUNNER, NULL };
  NapkinRunJob *job = napkin_run_job_new (d, argv);

  g_setenv ("FAKE_MODE", mode, TRUE);
  napkin_run_job_set_runner (job, runner);
  return job;
}

static void
run (NapkinRunJob *job,
     GCancellable *cancellable,
     Wait         *w)
{
  w->loop = g_main_loop_new (NULL, FALSE);
  g_signal_connect (job, "notify::message", G_CALLBACK (message_cb), w);
  napkin_run_job_run_async (job, cancellable, done_cb, w);
  g_main_loop_run (w->loop);
  g_main_loop_unref (w->loop);
}

static void
test_fake_ok (void)
{
  g_autoptr(NapkinRunJob) job = fake_job ("ok");
  Wait w = { 0 };
  const char *args;

  run (job, NULL, &w);
  g_assert_no_error (w.error);
  g_assert_cmpstr (json_object_get_string (json_object_object_get (w.result, "status")), ==, "ok");
  /* The diagram went to the child as a file, with the extra options and the limit. */
  args = json_object_get_string (json_object_object_get (w.result, "args"));
  g_assert_nonnull (strstr (args, ".napkin --timeout=300 --repeats=7"));
  g_assert_cmpint (json_object_get_int (json_object_object_get (w.result, "exit_status")), ==, 0);
  g_assert_cmpfloat (w.last_fraction, ==, 1.0);
  g_assert_cmpstr (napkin_run_job_get_message (job), ==, "Done");
  g_assert_cmpuint (w.messages, >=, 3);
  g_assert_cmpint (napkin_run_job_get_state (job), ==, NAPKIN_JOB_DONE);
  json_object_put (w.result);
}

static void
test_fake_timeout (void)
{
  g_autoptr(NapkinRunJob) job = fake_job ("hang");
  Wait w = { 0 };
  gint64 start = g_get_monotonic_time ();

  napkin_run_job_set_timeout (job, 1);
  run (job, NULL, &w);
  g_assert_no_error (w.error);
  g_assert_cmpstr (json_object_get_string (json_object_object_get (w.result, "status")), ==, "timeout");
  g_assert_cmpint (g_get_monotonic_time () - start, <, 10 * G_USEC_PER_SEC);
  g_assert_cmpint (napkin_run_job_get_state (job), ==, NAPKIN_JOB_FAILED);
  json_object_put (w.result);
}

static void
test_fake_crash (void)
{
  g_autoptr(NapkinRunJob) job = fake_job ("crash");
  Wait w = { 0 };

  run (job, NULL, &w);
  g_assert_no_error (w.error);
  g_assert_cmpstr (json_object_get_string (json_object_object_get (w.result, "status")), ==, "crashed");
  g_assert_nonnull (strstr (json_object_get_string (json_object_object_get (w.result, "message")), "signal 11"));
  json_object_put (w.result);
}

static void
test_fake_garbage (void)
{
  g_autoptr(NapkinRunJob) job = fake_job ("garbage");
  Wait w = { 0 };

  run (job, NULL, &w);
  g_assert_error (w.error, NAPKIN_JOB_ERROR, NAPKIN_JOB_ERROR_OUTPUT);
  g_clear_error (&w.error);
}

static gboolean
cancel_later (gpointer data)
{
  g_cancellable_cancel (data);
  return G_SOURCE_REMOVE;
}

static void
test_fake_cancel (void)
{
  g_autoptr(NapkinRunJob) job = fake_job ("hang");
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  Wait w = { 0 };
  gint64 start = g_get_monotonic_time ();

  g_timeout_add (200, cancel_later, cancellable);
  run (job, cancellable, &w);
  g_assert_error (w.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_cmpint (g_get_monotonic_time () - start, <, 5 * G_USEC_PER_SEC);
  g_assert_cmpint (napkin_run_job_get_state (job), ==, NAPKIN_JOB_CANCELLED);
  g_clear_error (&w.error);
}

/* A process is gone when kill (pid, 0) fails or it is a zombie nobody reaps yet. */
static gboolean
process_gone (GPid pid)
{
  g_autofree char *stat_path = g_strdup_printf ("/proc/%d/stat", (int) pid);
  g_autofree char *stat = NULL;
  const char *paren;

  if (kill (pid, 0) != 0)
    return TRUE;
  if (!g_file_get_contents (stat_path, &stat, NULL, NULL))
    return TRUE;
  paren = strrchr (stat, ')');
  return paren != NULL && paren[1] == ' ' && paren[2] == 'Z';
}

static GPid
read_pid_file (const char *path)
{
  g_autofree char *text = NULL;

  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  return (GPid) atoi (text);
}

static void
assert_gone_soon (GPid pid)
{
  for (guint i = 0; i < 50 && !process_gone (pid); i++)
    g_usleep (100000);
  g_assert_true (process_gone (pid));
}

/* A runner that exits but leaves a process holding its pipes: the job used to wait
 * for that process (here 600 s). Now the runner's process group goes with it. */
static void
test_fake_orphan (void)
{
  g_autoptr(NapkinRunJob) job = fake_job ("orphan");
  g_autofree char *dir = g_dir_make_tmp ("napkin-runner-XXXXXX", NULL);
  g_autofree char *pid_file = g_build_filename (dir, "pid", NULL);
  Wait w = { 0 };
  gint64 start = g_get_monotonic_time ();

  g_setenv ("FAKE_PIDFILE", pid_file, TRUE);
  run (job, NULL, &w);
  g_assert_no_error (w.error);
  g_assert_cmpstr (json_object_get_string (json_object_object_get (w.result, "status")), ==, "ok");
  g_assert_cmpint (g_get_monotonic_time () - start, <, 10 * G_USEC_PER_SEC);
  assert_gone_soon (read_pid_file (pid_file));
  json_object_put (w.result);
  g_unlink (pid_file);
  g_rmdir (dir);
}

/* A runner that hangs, with a child holding its pipes: the timeout stops both. */
static void
test_fake_hang_with_child (void)
{
  g_autoptr(NapkinRunJob) job = fake_job ("hang-with-child");
  g_autofree char *dir = g_dir_make_tmp ("napkin-runner-XXXXXX", NULL);
  g_autofree char *pid_file = g_build_filename (dir, "pid", NULL);
  Wait w = { 0 };
  gint64 start = g_get_monotonic_time ();

  g_setenv ("FAKE_PIDFILE", pid_file, TRUE);
  napkin_run_job_set_timeout (job, 1);
  run (job, NULL, &w);
  g_assert_no_error (w.error);
  g_assert_cmpstr (json_object_get_string (json_object_object_get (w.result, "status")), ==, "timeout");
  g_assert_cmpint (g_get_monotonic_time () - start, <, 10 * G_USEC_PER_SEC);
  assert_gone_soon (read_pid_file (pid_file));
  json_object_put (w.result);
  g_unlink (pid_file);
  g_rmdir (dir);
}

static glong
max_rss_kb (void)
{
  struct rusage usage;

  getrusage (RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

/* 96 MiB on the runner's standard output: read and dropped past the cap (the whole
 * of it used to be kept, and more than twice that while the buffer grew). */
static void
test_fake_flood_stdout (void)
{
  g_autoptr(NapkinRunJob) job = fake_job ("flood-stdout");
  Wait w = { 0 };
  glong before = max_rss_kb ();

  run (job, NULL, &w);
  g_assert_error (w.error, NAPKIN_JOB_ERROR, NAPKIN_JOB_ERROR_OUTPUT);
  g_assert_nonnull (strstr (w.error->message, "more than 4194304 bytes on its standard output"));
  g_test_message ("peak memory grew by %ld KiB", max_rss_kb () - before);
  g_assert_cmpint (max_rss_kb () - before, <, 32 * 1024);
  g_clear_error (&w.error);
}

/* 32 MiB on the error stream without a newline: the result keeps a cut line, not
 * the whole of it (the 16 KiB cap used to be checked once per line). */
static void
test_fake_long_stderr_line (void)
{
  g_autoptr(NapkinRunJob) job = fake_job ("long-stderr-line");
  Wait w = { 0 };
  const char *tail;

  run (job, NULL, &w);
  g_assert_no_error (w.error);
  g_assert_cmpstr (json_object_get_string (json_object_object_get (w.result, "status")), ==, "ok");
  tail = json_object_get_string (json_object_object_get (w.result, "stderr"));
  g_assert_nonnull (tail);
  g_assert_cmpuint (strlen (tail), <=, 16384);
  g_assert_true (g_str_has_suffix (tail, "xxx […]\n"));
  json_object_put (w.result);
}

static gboolean
have_driver (void)
{
  void *h = dlopen ("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

  if (h != NULL)
    dlclose (h);
  return h != NULL;
}

/* The real runner on a machine without a GPU: a clear message, not a crash. */
static void
test_real_no_gpu (void)
{
  const char *real = g_getenv ("NAPKIN_RUNNER_REAL");
  g_autoptr(NapkinDiagram) d = example ("flash-attention.napkin");
  g_autoptr(NapkinRunJob) job = NULL;
  Wait w = { 0 };

  if (real == NULL)
    {
      g_test_skip ("napkin-runner was not built (no CUDA toolkit)");
      return;
    }
  if (have_driver ())
    {
      g_test_skip ("this machine has a CUDA driver");
      return;
    }
  job = napkin_run_job_new (d, NULL);
  napkin_run_job_set_runner (job, (const char *[]) { real, NULL });
  run (job, NULL, &w);
  g_assert_no_error (w.error);
  g_assert_cmpstr (json_object_get_string (json_object_object_get (w.result, "status")), ==, "no-gpu");
  g_assert_nonnull (strstr (json_object_get_string (json_object_object_get (w.result, "message")), "No CUDA driver"));
  g_assert_cmpint (json_object_get_int (json_object_object_get (w.result, "exit_status")), ==, 3);
  /* where the time went, up to the step that stopped it: lowering, then the total */
  {
    json_object *phases = json_object_object_get (w.result, "phases");
    double lower = json_object_get_double (json_object_object_get (phases, "lower"));
    double total = json_object_get_double (json_object_object_get (phases, "total"));

    g_assert_nonnull (json_object_object_get (phases, "lower"));
    g_assert_cmpfloat (lower, >, 0);
    g_assert_cmpfloat (total, >=, lower);
    g_assert_cmpfloat (total, <, 10);
    g_assert_null (json_object_object_get (phases, "init"));
  }
  json_object_put (w.result);

  /* a negative time budget is a usage error */
  {
    g_autoptr(GError) error = NULL;
    int status = 0;

    g_spawn_sync (NULL, (char *[]) { (char *) real, "--time-budget=-1", "x.napkin", NULL }, NULL,
                  G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, NULL, NULL, &status, &error);
    g_assert_no_error (error);
    g_assert_true (WIFEXITED (status));
    g_assert_cmpint (WEXITSTATUS (status), ==, 2);
  }
}

/* napkin-cli run without a GPU: says so, exits non-zero. */
static void
test_cli_no_gpu (void)
{
  const char *cli = g_getenv ("NAPKIN_CLI");
  g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), "matmul-tiled.napkin", NULL);
  g_autofree char *out = NULL, *err = NULL;
  g_autoptr(GError) error = NULL;
  int status = 0;

  if (g_getenv ("NAPKIN_RUNNER_REAL") == NULL || have_driver ())
    {
      g_test_skip ("needs the real runner on a machine without a GPU");
      return;
    }
  g_setenv ("NAPKIN_RUNNER", g_getenv ("NAPKIN_RUNNER_REAL"), TRUE);
  g_spawn_sync (NULL, (char *[]) { (char *) cli, "run", path, "--axis", "m=256", NULL }, NULL, G_SPAWN_DEFAULT,
                NULL, NULL, &out, &err, &status, &error);
  g_unsetenv ("NAPKIN_RUNNER");
  g_assert_no_error (error);
  g_assert_true (WIFEXITED (status));
  g_assert_cmpint (WEXITSTATUS (status), ==, 1);
  g_assert_nonnull (strstr (err, "napkin-cli run: no GPU: No CUDA driver on this machine"));
}

static int
cli (const char * const *args,
     char              **out,
     char              **err)
{
  g_autoptr(GPtrArray) argv = g_ptr_array_new ();
  g_autoptr(GError) error = NULL;
  int status = 0;

  g_ptr_array_add (argv, (char *) g_getenv ("NAPKIN_CLI"));
  for (guint i = 0; args[i]; i++)
    g_ptr_array_add (argv, (char *) args[i]);
  g_ptr_array_add (argv, NULL);
  g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, out, err, &status, &error);
  g_assert_no_error (error);
  g_assert_true (WIFEXITED (status));
  return WEXITSTATUS (status);
}

/* napkin-cli codegen: targets, output file, overrides, and clear errors. */
static void
test_cli_codegen (void)
{
  g_autofree char *flash = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), "flash-attention.napkin", NULL);
  g_autofree char *tiled = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), "matmul-tiled.napkin", NULL);
  g_autofree char *dir = g_dir_make_tmp ("napkin-cli-XXXXXX", NULL);
  g_autofree char *cu = g_build_filename (dir, "flash.cu", NULL);
  g_autofree char *text = NULL;
  char *out = NULL, *err = NULL;

  g_assert_cmpint (cli ((const char *[]) { "codegen", flash, "--target", "pseudo", NULL }, &out, &err), ==, 0);
  g_assert_nonnull (strstr (out, "for each chunk of 128 along k (32 chunks, in sequence):"));
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);

  /* --tile reaches the code: a 32-key stream (on the A100's mma.sync attention kernel) */
  g_assert_cmpint (cli ((const char *[]) { "codegen", flash, "--arch", "a100", "--tile", "block.k=32", "-o", cu, NULL },
                        &out, &err), ==, 0);
  g_assert_true (g_file_get_contents (cu, &text, NULL, NULL));
  g_assert_nonnull (strstr (text, "#define NKP_BKV 32\n"));
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);

  g_assert_cmpint (cli ((const char *[]) { "codegen", tiled, "--target", "standalone", "--axis", "m=256", NULL }, &out, &err), ==, 0);
  g_assert_nonnull (strstr (out, "int main"));
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);

  g_assert_cmpint (cli ((const char *[]) { "codegen", tiled, "--target", "ptx", NULL }, &out, &err), ==, 2);
  g_assert_nonnull (strstr (err, "--target must be cuda, standalone, pseudo or pytorch"));
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);

  /* the model's verdict, as analyze and plan give it (docs/cli.md), before any lowering */
  g_assert_cmpint (cli ((const char *[]) { "codegen", tiled, "--tile", "block.k=parallel:8", NULL }, &out, &err), ==, 1);
  g_assert_nonnull (strstr (err, "INFEASIBLE on h100: regions[0].marks.k"));
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);

  /* The CPU interpreter from the command line: streaming softmax equals the plain one. */
  g_assert_cmpint (cli ((const char *[]) { "codegen", flash, "--check", "--axis", "q=96", "--axis", "k=80",
                                           "--axis", "b=1", "--axis", "h=2", "--axis", "d=16", "--tile", "block.q=32",
                                           "--tile", "block.k=16", NULL }, &out, &err), ==, 0);
  g_assert_nonnull (strstr (out, "O: relabeled vs plain, relative error"));
  g_assert_nonnull (strstr (out, ": ok"));
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);
  g_assert_cmpint (cli ((const char *[]) { "codegen", flash, "--check", NULL }, &out, &err), ==, 1);
  g_assert_nonnull (strstr (err, "too much for the CPU interpreter"));
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);

  g_remove (cu);
  g_rmdir (dir);
}

/* napkin-cli run's report, from a recorded H200 result through the test double:
 * the summary, and the model's prediction for the GPU the runner found. */
static void
test_cli_run_recorded (void)
{
  g_autofree char *tiled = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), "matmul-tiled.napkin", NULL);
  char *out = NULL, *err = NULL;

  g_setenv ("NAPKIN_RUNNER", FAKE_RUNNER, TRUE);
  g_setenv ("FAKE_MODE", "recorded", TRUE);
  g_assert_cmpint (cli ((const char *[]) { "run", tiled, NULL }, &out, &err), ==, 0);
  g_assert_nonnull (strstr (out, "on NVIDIA H200 (sm_90a, driver 13.0)"));
  g_assert_nonnull (strstr (out, "kernel napkin_k0    gemm-mma"));
  g_assert_nonnull (strstr (out, "time       0.5586 ms, median of 20"));
  g_assert_nonnull (strstr (out, ": ok"));
  g_assert_nonnull (strstr (out, "ms on h200 (bound:"));
  /* the recorded result predates the runner's phases: the CLI's own are there */
  g_assert_nonnull (strstr (out, "  phases     cli_load 0.0"));
  g_assert_nonnull (strstr (out, " cli_runner_process "));
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);

  g_assert_cmpint (cli ((const char *[]) { "run", tiled, "--json", NULL }, &out, &err), ==, 0);
  g_assert_nonnull (strstr (out, "\"prediction\""));
  {
    /* the runner's phases, and the CLI's own beside them */
    g_autoptr(json_object) r = json_tokener_parse (out);
    json_object *phases = json_object_object_get (r, "phases");
    double process = json_object_get_double (json_object_object_get (phases, "cli_runner_process"));

    g_assert_nonnull (phases);
    g_assert_cmpfloat (process, >, 0);
    g_assert_cmpfloat (process, <, 30);
    g_assert_nonnull (json_object_object_get (phases, "cli_load"));
    g_assert_nonnull (json_object_object_get (phases, "cli_prediction"));
  }
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);
  g_unsetenv ("NAPKIN_RUNNER");
}

/* napkin-cli run on a derived block of several kernels: each model kernel's predicted
 * time beside the measured time of its module kernels (runner's kernels[].owner and
 * time_ms), and the totals, in text and JSON. */
static void
test_cli_run_kernels (void)
{
  g_autofree char *src = g_build_filename (g_getenv ("NAPKIN_SOURCE_DIR"), "tests", "data", "derive",
                                           "swiglu-block.napkin", NULL);
  g_autofree char *dir = g_dir_make_tmp ("napkin-run-XXXXXX", NULL);
  g_autofree char *file = g_build_filename (dir, "block.napkin", NULL);
  g_autofree char *text = NULL;
  char *out = NULL, *err = NULL;

  g_assert_true (g_file_get_contents (src, &text, NULL, NULL));
  g_assert_true (g_file_set_contents (file, text, -1, NULL));
  g_assert_cmpint (cli ((const char *[]) { "tune", file, "--derive", "--apply", NULL }, &out, &err), ==, 0);
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);
  g_setenv ("NAPKIN_RUNNER", FAKE_RUNNER, TRUE);
  g_setenv ("FAKE_MODE", "block", TRUE);
  g_assert_cmpint (cli ((const char *[]) { "run", file, NULL }, &out, &err), ==, 0);
  g_test_message ("%s", out);
  g_assert_nonnull (strstr (out, "per kernel  kernel"));
  /* the model's 3 kernels (derived: 47.1 µs, 2.47 ms for the gate and up projections as
   * one gated GEMM, 1.23 ms) beside the runner's; total predicted 3.7498 ms, measured
   * 0.0512 + 2.3603 + 1.1803 */
  g_assert_nonnull (strstr (out, "glu                          gemm       wgmma       2.4747 ms   2.3603 ms   0.95×"));
  g_assert_nonnull (strstr (out, "norm                         rows"));
  g_assert_nonnull (strstr (out, "0.0512 ms"));
  g_assert_nonnull (strstr (out, "total (kernels one by one)                          3.7498 ms   3.5918 ms   0.96×"));
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);

  g_assert_cmpint (cli ((const char *[]) { "run", file, "--format", "json", NULL }, &out, &err), ==, 0);
  {
    g_autoptr(json_object) r = json_tokener_parse (out);
    json_object *p = json_object_object_get (r, "prediction");
    json_object *ks = json_object_object_get (p, "kernels");
    json_object *down = json_object_array_get_idx (ks, 2);

    g_assert_cmpuint (json_object_array_length (ks), ==, 3);
    g_assert_cmpstr (json_object_get_string (json_object_object_get (down, "name")), ==, "down");
    g_assert_cmpfloat_with_epsilon (json_object_get_double (json_object_object_get (down, "measured_ms")), 1.1803, 1e-9);
    g_assert_cmpfloat (json_object_get_double (json_object_object_get (down, "predicted_ms")), >, 0.9);
    g_assert_cmpfloat (json_object_get_double (json_object_object_get (down, "predicted_ms")), <, 1.3);
    g_assert_cmpfloat_with_epsilon (json_object_get_double (json_object_object_get (p, "kernels_measured_ms")), 3.5918,
                                    1e-9);
    g_assert_cmpfloat_with_epsilon (json_object_get_double (json_object_object_get (p, "kernels_predicted_ms")), 3.7498,
                                    1e-3);
  }
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);
  g_unsetenv ("NAPKIN_RUNNER");
  g_remove (file);
  g_rmdir (dir);
}

/* napkin-cli run --gpus 2: the runner is asked for 2 GPUs, its per-kernel and
 * per-collective report is printed beside the model's shard analysis. */
static void
test_cli_run_gpus (void)
{
  g_autofree char *tp = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), "tp-mlp.napkin", NULL);
  char *out = NULL, *err = NULL;
  json_object *r, *p;

  g_setenv ("NAPKIN_RUNNER", FAKE_RUNNER, TRUE);
  g_setenv ("FAKE_MODE", "gpus", TRUE);
  g_assert_cmpint (cli ((const char *[]) { "run", tp, "--gpus", "2", NULL }, &out, &err), ==, 0);
  g_assert_nonnull (strstr (out, "on 2× NVIDIA H100 80GB HBM3 (sm_90a, NCCL 2.28.3)"));
  g_assert_nonnull (strstr (out, "kernel     napkin_k1    gemm-wgmma    0.4500 ms"));
  g_assert_nonnull (strstr (out, "all-reduce     Y          67.1 MB/rank    0.2500 ms, predicted 0.2364 ms (268 GB/s bus)"));
  g_assert_nonnull (strstr (out, "time       1.5000 ms, median of 20 (kernels 1.2500, collectives 0.2500)"));
  g_assert_nonnull (strstr (out, "relative to the one-GPU fp32 reference (bound 0.0078): ok"));
  g_assert_nonnull (strstr (out, "ms on h100 (compute "));
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);

  g_assert_cmpint (cli ((const char *[]) { "run", tp, "--gpus", "2", "--json", NULL }, &out, &err), ==, 0);
  r = json_tokener_parse (out);
  g_assert_nonnull (r);
  p = json_object_object_get (r, "prediction");
  g_assert_nonnull (p);
  g_assert_cmpstr (json_object_get_string (json_object_object_get (p, "arch")), ==, "h100");
  /* the model's all-reduce of Y: 64 MiB on 2 H100s, the same figure the runner reports from the plan */
  g_assert_cmpfloat_with_epsilon (json_object_get_double (json_object_object_get (p, "collectives_ms")), 0.2327, 0.0005);
  g_assert_cmpfloat (json_object_get_double (json_object_object_get (p, "compute_ms")), >, 0);
  g_assert_cmpfloat_with_epsilon (json_object_get_double (json_object_object_get (p, "time_ms")),
                                  json_object_get_double (json_object_object_get (p, "compute_ms"))
                                  + json_object_get_double (json_object_object_get (p, "collectives_ms")), 1e-9);
  /* no overlap asked: nothing chunked, no note */
  g_assert_cmpfloat_with_epsilon (json_object_get_double (json_object_object_get (p, "chunked_ms")),
                                  json_object_get_double (json_object_object_get (p, "time_ms")), 1e-9);
  g_assert_null (json_object_object_get (p, "overlap_note"));
  json_object_put (r);
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);

  /* the overlapped MLP: the wgmma GEMMs fill every SM, NCCL waits for them to drain
   * (docs/model.md, "SMs left to NCCL"); the gain, against the same chunks run one
   * after another, −0.071 ms: a loss (measured on 2× H200: −0.042 ms at s = 0) */
  {
    g_autofree char *tpo = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), "tp-mlp-overlap.napkin", NULL);

    g_assert_cmpint (cli ((const char *[]) { "run", tpo, "--gpus", "2", "--json", NULL }, &out, &err), ==, 0);
    r = json_tokener_parse (out);
    g_assert_nonnull (r);
    p = json_object_object_get (r, "prediction");
    g_assert_nonnull (p);
    g_assert_cmpfloat_with_epsilon (json_object_get_double (json_object_object_get (p, "gain_ms")), -0.0771, 0.0005);
    g_assert_cmpfloat_with_epsilon (json_object_get_double (json_object_object_get (p, "chunked_ms"))
                                    - json_object_get_double (json_object_object_get (p, "overlapped_ms")), -0.0771, 0.0005);
    g_assert_nonnull (strstr (json_object_get_string (json_object_object_get (p, "overlap_note")),
                              "NCCL's CTAs wait for its SMs to drain"));
    json_object_put (r);
    g_clear_pointer (&out, g_free);
    g_clear_pointer (&err, g_free);
  }
  g_unsetenv ("NAPKIN_RUNNER");
}

/* --gpus 2 with the real runner on a machine without a GPU: a clear error naming the
 * count, exit 1 as other failed runs; the runner alone says the same for --collectives. */
static void
test_cli_gpus_no_gpu (void)
{
  g_autofree char *tp = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), "tp-mlp.napkin", NULL);
  char *out = NULL, *err = NULL;

  if (g_getenv ("NAPKIN_RUNNER_REAL") == NULL || have_driver ())
    {
      g_test_skip ("needs the real runner on a machine without a GPU");
      return;
    }
  g_setenv ("NAPKIN_RUNNER", g_getenv ("NAPKIN_RUNNER_REAL"), TRUE);
  g_assert_cmpint (cli ((const char *[]) { "run", tp, "--gpus", "2", NULL }, &out, &err), ==, 1);
  g_assert_nonnull (strstr (err, "napkin-cli run: no GPU: --gpus 2: this machine has no usable GPU (No CUDA driver"));
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);
  g_assert_cmpint (cli ((const char *[]) { "calibrate", "--collectives", "--gpus", "2", NULL }, &out, &err), ==, 1);
  g_assert_nonnull (strstr (err, "--gpus 2: this machine has no usable GPU"));
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);
  g_unsetenv ("NAPKIN_RUNNER");
}

/* The runner's --dry-run: the shard plan of each example compiled with NVRTC and every
 * collective's buffers resolved (Ulysses: unpack after the inputs' all-to-all, pack
 * before the output's), no GPU. */
static void
test_runner_dry_run (void)
{
  const char *real = g_getenv ("NAPKIN_RUNNER_REAL");
  g_autofree char *ul = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), "ulysses-attention.napkin", NULL);
  g_autofree char *out = NULL, *err = NULL;
  g_autoptr(GError) error = NULL;
  json_object *r, *colls, *c;
  int status = 0;

  if (real == NULL)
    {
      g_test_skip ("napkin-runner was not built (no CUDA toolkit)");
      return;
    }
  g_spawn_sync (NULL, (char *[]) { (char *) real, ul, "--gpus=2", "--dry-run", "--model=h100", "--no-cache", NULL }, NULL,
                G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, &error);
  g_assert_no_error (error);
  r = json_tokener_parse (out);
  g_assert_nonnull (r);
  g_assert_cmpstr (json_object_get_string (json_object_object_get (r, "status")), ==, "ok");
  colls = json_object_object_get (r, "collectives");
  g_assert_cmpint (json_object_array_length (colls), ==, 4);
  c = json_object_array_get_idx (colls, 0);
  g_assert_cmpstr (json_object_get_string (json_object_object_get (c, "kind")), ==, "all-to-all");
  g_assert_cmpstr (json_object_get_string (json_object_object_get (c, "tensor")), ==, "Q");
  g_assert_cmpstr (json_object_get_string (json_object_object_get (c, "src")), ==, "runner buffer (as stored)");
  g_assert_false (json_object_get_boolean (json_object_object_get (c, "pack")));
  g_assert_true (json_object_get_boolean (json_object_object_get (c, "unpack")));
  /* [1, 32, 16384, 128] bf16 over 2 GPUs: a quarter of the tensor goes to each peer */
  g_assert_cmpint (json_object_get_int64 (json_object_object_get (c, "nccl_count")), ==, 16777216);
  c = json_object_array_get_idx (colls, 3);
  g_assert_cmpstr (json_object_get_string (json_object_object_get (c, "tensor")), ==, "O");
  g_assert_cmpint (json_object_get_int (json_object_object_get (c, "before_module_kernel")), ==,
                   json_object_get_int (json_object_object_get (r, "module_kernels")));
  g_assert_true (json_object_get_boolean (json_object_object_get (c, "pack")));
  g_assert_false (json_object_get_boolean (json_object_object_get (c, "unpack")));
  json_object_put (r);
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);

  /* the overlapped MLP: its 4-chunk module compiles and every input and output of a
   * chunk is a contiguous piece along t (or a whole weight) */
  {
    g_autofree char *tp = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), "tp-mlp-overlap.napkin", NULL);
    json_object *o;

    g_spawn_sync (NULL, (char *[]) { (char *) real, tp, "--gpus=2", "--dry-run", "--model=h100", NULL }, NULL,
                  G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, &error);
    g_assert_no_error (error);
    r = json_tokener_parse (out);
    g_assert_nonnull (r);
    g_assert_cmpstr (json_object_get_string (json_object_object_get (r, "status")), ==, "ok");
    o = json_object_object_get (r, "overlap");
    g_assert_cmpint (json_object_get_int (json_object_object_get (o, "chunks")), ==, 4);
    g_assert_cmpint (json_object_get_int (json_object_object_get (o, "chunk_kernels")), ==,
                     json_object_get_int (json_object_object_get (r, "module_kernels")));
    g_assert_null (json_object_object_get (o, "note"));
    c = json_object_array_get_idx (json_object_object_get (r, "collectives"), 0);
    g_assert_cmpstr (json_object_get_string (json_object_object_get (c, "kind")), ==, "all-reduce");
    g_assert_cmpstr (json_object_get_string (json_object_object_get (c, "src")), ==, "module slot");
    g_assert_cmpstr (json_object_get_string (json_object_object_get (c, "dst")), ==, "runner buffer (as stored)");
    json_object_put (r);
  }
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/runner/job/fake-ok", test_fake_ok);
  g_test_add_func ("/runner/job/fake-timeout", test_fake_timeout);
  g_test_add_func ("/runner/job/fake-crash", test_fake_crash);
  g_test_add_func ("/runner/job/fake-garbage", test_fake_garbage);
  g_test_add_func ("/runner/job/fake-cancel", test_fake_cancel);
  g_test_add_func ("/runner/job/fake-orphan", test_fake_orphan);
  g_test_add_func ("/runner/job/fake-hang-with-child", test_fake_hang_with_child);
  g_test_add_func ("/runner/job/fake-flood-stdout", test_fake_flood_stdout);
  g_test_add_func ("/runner/job/fake-long-stderr-line", test_fake_long_stderr_line);
  g_test_add_func ("/runner/real/no-gpu", test_real_no_gpu);
  g_test_add_func ("/runner/cli/no-gpu", test_cli_no_gpu);
  g_test_add_func ("/runner/cli/codegen", test_cli_codegen);
  g_test_add_func ("/runner/cli/run-recorded", test_cli_run_recorded);
  g_test_add_func ("/runner/cli/run-kernels", test_cli_run_kernels);
  g_test_add_func ("/runner/cli/run-gpus", test_cli_run_gpus);
  g_test_add_func ("/runner/cli/gpus-no-gpu", test_cli_gpus_no_gpu);
  g_test_add_func ("/runner/real/dry-run", test_runner_dry_run);
  return g_test_run ();
}
