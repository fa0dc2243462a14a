/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Prints the CUDA of one attention problem for bench/gpu/attn-prims/harness.cu: the
 * diagram a user would draw (tests/common/napkin-test-attention.c), its kernel plan for
 * the H100 (a mask set on the plan, docs/plan.md "Attention kernels"), the kernels as the
 * printers write them, then the problem's sizes, buffers, tensor maps and launches as the
 * harness reads them.
 *   attn-prims --list      the problems of the table, one spec a line
 *   attn-prims --list-scores  the score operands' problems (biases, keep flags)
 *   attn-prims --json SPEC the problem's diagram (a .napkin document)
 *   attn-prims SPEC        the source for SPEC: "name=N b=B h=H hk=HK nq=NQ nkv=NKV d=D
 *                          t=fp16 [v=T] [o=T] bq=BQ bkv=BKV st=S [gt=G] [bshd=1]
 *                          [mask=causal|window off=O left=L right=R] [general=1] [arch=ID]
 *                          [bias=AXES [bt=T] [first=1] [bfill=rand|pad]]
 *                          [keep=AXES [kfill=rand|pad|tril]] [alpha=A]"
 *                          (general=1: the general kernel even where flash-mma would run;
 *                          arch: the profile planned for, h100 by default; bias, keep: score
 *                          operands over the score axes b,h,g,q,k listed — a bias added after
 *                          the scale, or before it with first=1, int8 keep flags — filled at
 *                          random, as padding (keys past a length per sequence hidden: −∞,
 *                          flag 0) or, flags, as a lower triangle; docs/plan.md, "Score
 *                          operands") */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "napkin-codegen.h"
#include "napkin-file.h"
#include "napkin-model.h"
#include "napkin-test-attention.h"

/* The score operands' problems (bench/gpu/attn-prims/check --scores) */
static const char *score_table[] = {
  /* T5: a relative position bias [h, q, k] added to unscaled scores */
  "name=t5-bias-1k-d64 b=4 h=16 nq=1024 nkv=1024 d=64 t=bf16 bq=128 bkv=128 st=2 bias=h,q,k first=1 alpha=1",
  "name=t5-bias-2k-d64 b=2 h=16 nq=2048 nkv=2048 d=64 t=bf16 bq=128 bkv=128 st=2 bias=h,q,k first=1 alpha=1",
  /* BART / Whisper: an additive padding mask [b, k] of 0 / −∞ after the scale */
  "name=bart-pad-1k-d64 b=8 h=16 nq=1024 nkv=1024 d=64 t=fp16 bq=128 bkv=128 st=2 bias=b,k bfill=pad",
  "name=bart-cross-pad b=8 h=16 nq=256 nkv=1024 d=64 t=fp16 bq=128 bkv=128 st=2 bias=b,k bfill=pad",
  "name=whisper-cross-1500 b=4 h=20 nq=448 nkv=1500 d=64 t=fp16 bq=128 bkv=128 st=2 bias=b,k bfill=pad",
  /* HF's expanded additive mask [b, h, q, k], ALiBi-like [h, q, k] */
  "name=bias-bhqk-2k-d128 b=2 h=16 nq=2048 nkv=2048 d=128 t=fp16 bq=128 bkv=128 st=2 bias=b,h,q,k",
  "name=bias-hqk-4k-d128 b=2 h=16 nq=4096 nkv=4096 d=128 t=bf16 bq=128 bkv=128 st=2 bias=h,q,k",
  /* boolean masks: SDPA's attn_mask [q, k] and [b, 1, q, k], GPT-2's tril buffer */
  "name=keep-qk-2k-d128 b=2 h=16 nq=2048 nkv=2048 d=128 t=fp16 bq=128 bkv=128 st=2 keep=q,k",
  "name=keep-bqk-2k-d128 b=4 h=16 nq=2048 nkv=2048 d=128 t=bf16 bq=128 bkv=128 st=2 keep=b,q,k",
  "name=gpt2-tril-1k-d64 b=8 h=12 nq=1024 nkv=1024 d=64 t=fp16 bq=128 bkv=128 st=2 keep=q,k kfill=tril",
  /* padding of GQA prefill and decoding, a bias beside padding flags, 77 keys */
  "name=gqa-pad-2k b=2 h=32 hk=8 nq=2048 nkv=2048 d=128 t=bf16 bq=128 bkv=128 st=2 keep=b,k kfill=pad",
  "name=decode-pad-8k b=16 h=32 hk=8 nq=1 nkv=8192 d=128 t=bf16 bq=0 bkv=128 st=2 gt=4 keep=b,k kfill=pad",
  "name=t5-bias-keep-pad b=4 h=16 nq=1024 nkv=1024 d=64 t=bf16 bq=128 bkv=128 st=2 bias=h,q,k first=1 alpha=1 "
  "keep=b,k kfill=pad",
  "name=cross-77-pad b=2 h=8 nq=4096 nkv=77 d=64 t=fp16 bq=128 bkv=64 st=2 bias=b,k bfill=pad",
};

static const char *table[] = {
  /* today's family; planned for the A100 (sm80 code, which Hopper runs too), the flash-mma
   * skeleton and the general kernel (general=1) on the same shapes (docs/plan.md, "The
   * legacy attention skeletons") */
  "name=mha-4k-d128 b=4 h=16 nq=4096 nkv=4096 d=128 t=fp16 bq=128 bkv=128 st=3",
  "name=a100-4k-d128 b=4 h=16 nq=4096 nkv=4096 d=128 t=fp16 bq=128 bkv=128 st=3 arch=a100",
  "name=a100-4k-d128-gen b=4 h=16 nq=4096 nkv=4096 d=128 t=fp16 bq=128 bkv=128 st=3 arch=a100 general=1",
  "name=mha-8k-d128 b=2 h=16 nq=8192 nkv=8192 d=128 t=bf16 bq=128 bkv=128 st=3",
  "name=mha-4k-d64 b=4 h=16 nq=4096 nkv=4096 d=64 t=fp16 bq=128 bkv=128 st=4",
  "name=a100-4k-d64 b=4 h=16 nq=4096 nkv=4096 d=64 t=fp16 bq=128 bkv=128 st=4 arch=a100",
  "name=a100-4k-d64-gen b=4 h=16 nq=4096 nkv=4096 d=64 t=fp16 bq=128 bkv=128 st=4 arch=a100 general=1",
  "name=mha-32k-d128 b=1 h=16 nq=32768 nkv=32768 d=128 t=bf16 bq=128 bkv=128 st=3",
  /* one step off it: lengths that do not divide, other head dims */
  "name=mha-4000-d128 b=4 h=16 nq=4000 nkv=4000 d=128 t=fp16 bq=128 bkv=128 st=3",
  "name=mha-1000-d128 b=16 h=16 nq=1000 nkv=1000 d=128 t=fp16 bq=128 bkv=128 st=3",
  "name=mha-4k-d96 b=4 h=16 nq=4096 nkv=4096 d=96 t=fp16 bq=128 bkv=128 st=3",
  "name=mha-4k-d80 b=4 h=16 nq=4096 nkv=4096 d=80 t=bf16 bq=128 bkv=128 st=3",
  "name=mha-8k-d192 b=2 h=16 nq=8192 nkv=8192 d=192 t=bf16 bq=128 bkv=96 st=2",
  "name=mha-8k-d256 b=2 h=16 nq=8192 nkv=8192 d=256 t=bf16 bq=128 bkv=64 st=2",
  "name=mha-128-d64 b=32 h=16 nq=128 nkv=128 d=64 t=fp16 bq=128 bkv=64 st=2",
  "name=mha-3000-d64 b=4 h=16 nq=3000 nkv=3000 d=64 t=fp16 bq=192 bkv=128 st=2",
  "name=mha-2047-d112 b=4 h=16 nq=2047 nkv=2047 d=112 t=bf16 bq=128 bkv=96 st=2",
  /* causal */
  "name=causal-4k-d128 b=4 h=16 nq=4096 nkv=4096 d=128 t=fp16 bq=128 bkv=128 st=3 mask=causal",
  "name=causal-8k-d128 b=2 h=16 nq=8192 nkv=8192 d=128 t=bf16 bq=128 bkv=128 st=3 mask=causal",
  "name=causal-1000-d64 b=16 h=16 nq=1000 nkv=1000 d=64 t=fp16 bq=128 bkv=128 st=2 mask=causal",
  "name=causal-16k-d128 b=1 h=16 nq=16384 nkv=16384 d=128 t=bf16 bq=128 bkv=128 st=3 mask=causal",
  /* GQA (Llama-3-8B: 32 query heads, 8 KV heads), MQA, cross-attention */
  "name=gqa-4k-causal b=2 h=32 hk=8 nq=4096 nkv=4096 d=128 t=bf16 bq=128 bkv=128 st=3 mask=causal",
  "name=gqa-4k b=2 h=32 hk=8 nq=4096 nkv=4096 d=128 t=bf16 bq=128 bkv=128 st=3",
  "name=gqa-2k-bshd b=2 h=32 hk=8 nq=2048 nkv=2048 d=128 t=bf16 bq=128 bkv=128 st=3 bshd=1",
  "name=mqa-4k b=2 h=16 hk=1 nq=4096 nkv=4096 d=128 t=fp16 bq=128 bkv=128 st=3",
  "name=gqa-prefill-cache b=2 h=32 hk=8 nq=1024 nkv=4096 d=128 t=bf16 bq=128 bkv=128 st=3 mask=causal off=3072",
  "name=cross-1k-8k b=4 h=16 nq=1024 nkv=8192 d=128 t=fp16 bq=128 bkv=128 st=3",
  "name=cross-4096-77 b=2 h=8 nq=4096 nkv=77 d=64 t=fp16 bq=128 bkv=64 st=2",
  /* sliding window (Mistral: 4096 keys back) */
  "name=window-8k-4096 b=2 h=32 hk=8 nq=8192 nkv=8192 d=128 t=bf16 bq=128 bkv=128 st=3 mask=window left=4096 right=0",
  "name=window-4k-1024 b=2 h=16 nq=4096 nkv=4096 d=128 t=fp16 bq=128 bkv=128 st=3 mask=window left=1024 right=0",
  /* decoding: a few queries against a long KV cache, the group packed in one block */
  "name=decode-q1-k4k-b64 b=64 h=32 hk=8 nq=1 nkv=4096 d=128 t=bf16 bq=0 bkv=64 st=4 gt=4",
  "name=decode-q1-k16k-b8 b=8 h=32 hk=8 nq=1 nkv=16384 d=128 t=bf16 bq=0 bkv=64 st=4 gt=4",
  "name=decode-q1-k32k-b1 b=1 h=32 hk=8 nq=1 nkv=32768 d=128 t=bf16 bq=0 bkv=64 st=4 gt=4",
  "name=decode-q1-k128k-b1 b=1 h=32 hk=8 nq=1 nkv=131072 d=128 t=bf16 bq=0 bkv=64 st=4 gt=4",
  "name=decode-q8-k8k-b4 b=4 h=32 hk=8 nq=8 nkv=8192 d=128 t=fp16 bq=0 bkv=64 st=4 gt=4 mask=causal off=8184",
  "name=decode-q1-k100000-b2 b=2 h=32 hk=8 nq=1 nkv=100000 d=128 t=bf16 bq=0 bkv=64 st=4 gt=4",
  "name=decode-mqa-q1-k16k-b2 b=2 h=16 hk=1 nq=1 nkv=16384 d=128 t=fp16 bq=0 bkv=64 st=4 gt=16",
  /* fp8 e4m3 */
  "name=fp8-4k-d128 b=4 h=16 nq=4096 nkv=4096 d=128 t=fp8-e4m3 v=fp8-e4m3 o=fp16 bq=128 bkv=128 st=2",
  "name=fp8-qk-4k-d128 b=4 h=16 nq=4096 nkv=4096 d=128 t=fp8-e4m3 v=fp16 o=fp16 bq=128 bkv=128 st=2",
  "name=fp8-causal-4k b=4 h=16 nq=4096 nkv=4096 d=128 t=fp8-e4m3 v=fp8-e4m3 o=bf16 bq=128 bkv=128 st=2 mask=causal",
  "name=fp8-2000-d64 b=4 h=16 nq=2000 nkv=2000 d=64 t=fp8-e4m3 v=fp8-e4m3 o=fp16 bq=128 bkv=128 st=2",
};

static int
dtype_code (NapkinDtype t)
{
  switch (t)
    {
    case NAPKIN_DTYPE_FP16: return 1;
    case NAPKIN_DTYPE_BF16: return 2;
    case NAPKIN_DTYPE_FP8_E4M3: return 3;
    case NAPKIN_DTYPE_FP8_E5M2: return 4;
    case NAPKIN_DTYPE_INT8: return 5;
    case NAPKIN_DTYPE_FP32:
    default:
      return 0;
    }
}

typedef struct
{
  char               *name;
  NapkinTestAttention c;
  NapkinAttnMask      mask;
  gint64              offset, left, right;
  gboolean            general;
  char               *arch;
  int                 bfill, kfill;   /* 0 random, 1 padding, 2 lower triangle (flags) */
  char               *strings[8];
} Spec;

static void
spec_clear (Spec *s)
{
  g_free (s->name);
  g_free (s->arch);
  for (guint i = 0; i < G_N_ELEMENTS (s->strings); i++)
    g_free (s->strings[i]);
}

static gboolean
parse (const char *text,
       Spec       *s,
       GError    **error)
{
  g_auto (GStrv) words = g_strsplit_set (text, " \t", -1);

  memset (s, 0, sizeof *s);
  s->c.dtype = "fp16";
  s->c.stages = 2;
  s->c.BKV = 128;
  s->c.BQ = 128;
  s->left = -1;
  for (guint i = 0; words[i] != NULL; i++)
    {
      const char *w = words[i], *eq = strchr (w, '=');
      g_autofree char *key = NULL;
      const char *val;
      gint64 n;

      if (*w == '\0')
        continue;
      if (eq == NULL)
        {
          g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "“%s”: KEY=VALUE expected", w);
          return FALSE;
        }
      key = g_strndup (w, eq - w);
      val = eq + 1;
      n = g_ascii_strtoll (val, NULL, 10);
#define INT(k, field) else if (g_str_equal (key, k)) field = n
      if (g_str_equal (key, "name"))
        s->name = g_strdup (val);
      else if (g_str_equal (key, "arch"))
        s->arch = g_strdup (val);
      INT ("b", s->c.B);
      INT ("h", s->c.H);
      INT ("hk", s->c.HK);
      INT ("nq", s->c.NQ);
      INT ("nkv", s->c.NKV);
      INT ("d", s->c.D);
      INT ("bq", s->c.BQ);
      INT ("bkv", s->c.BKV);
      INT ("st", s->c.stages);
      INT ("gt", s->c.group_tile);
      INT ("bshd", s->c.bshd);
      INT ("off", s->offset);
      INT ("left", s->left);
      INT ("right", s->right);
      INT ("general", s->general);
#undef INT
      else if (g_str_equal (key, "t"))
        s->c.dtype = s->strings[0] = g_strdup (val);
      else if (g_str_equal (key, "v"))
        s->c.v_dtype = s->strings[1] = g_strdup (val);
      else if (g_str_equal (key, "o"))
        s->c.o_dtype = s->strings[2] = g_strdup (val);
      else if (g_str_equal (key, "bias"))
        s->c.bias = s->strings[3] = g_strdup (val);
      else if (g_str_equal (key, "bt"))
        s->c.bias_dtype = s->strings[4] = g_strdup (val);
      else if (g_str_equal (key, "keep"))
        s->c.keep = s->strings[5] = g_strdup (val);
      else if (g_str_equal (key, "first"))
        s->c.bias_first = n != 0;
      else if (g_str_equal (key, "alpha"))
        s->c.alpha = g_ascii_strtod (val, NULL);
      else if (g_str_equal (key, "bfill") || g_str_equal (key, "kfill"))
        {
          int fill = g_str_equal (val, "pad") ? 1 : g_str_equal (val, "tril") ? 2 : g_str_equal (val, "rand") ? 0 : -1;

          if (fill < 0 || (fill == 2 && key[0] == 'b'))
            {
              g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "%s=%s: rand, pad (or, keep, tril)", key,
                           val);
              return FALSE;
            }
          *(key[0] == 'b' ? &s->bfill : &s->kfill) = fill;
        }
      else if (g_str_equal (key, "mask"))
        {
          if (g_str_equal (val, "causal"))
            s->mask = NAPKIN_ATTN_MASK_CAUSAL;
          else if (g_str_equal (val, "window"))
            s->mask = NAPKIN_ATTN_MASK_WINDOW;
          else if (!g_str_equal (val, "none"))
            {
              g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "mask=%s: none, causal or window", val);
              return FALSE;
            }
        }
      else
        {
          g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "unknown key “%s”", key);
          return FALSE;
        }
    }
  if (s->c.B < 1 || s->c.H < 1 || s->c.NQ < 1 || s->c.NKV < 1 || s->c.D < 1)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "b, h, nq, nkv and d must be positive");
      return FALSE;
    }
  if (s->name == NULL)
    s->name = g_strdup ("problem");
  return TRUE;
}

/* A score operand as the harness fills and reads it: NP_<WHAT> (present), its element
 * type code, fill (0 random, 1 padding, 2 lower triangle), slot, element count, its axes
 * (sizes and which score axis: 0 b, 1 h, 2 g, 3 q, 4 k) and strides along b, h, g, q, k
 * (NP_<WHAT>_S0 … S4). */
static void
print_operand (const char                *what,
               const NapkinTestAttention *c,
               const char                *axes,
               const char                *dtype,
               int                        fill,
               int                        slot)
{
  static const char *score_axes[5] = { "b", "h", "g", "q", "k" };
  gint64 hk = c->HK > 0 ? c->HK : c->H, sizes[5], dims[5] = { 1, 1, 1, 1, 1 }, strides[5] = { 0 }, n = 1;
  gboolean fp8 = g_str_has_prefix (c->dtype, "fp8");
  int which[5] = { 0 }, rank = 0;
  g_autofree char *lower = g_ascii_strdown (what, -1);
  NapkinDtype t = NAPKIN_DTYPE_FP16;

  sizes[0] = c->B;
  sizes[1] = hk > 1 && hk < c->H ? hk : hk == 1 && c->H > 1 ? 1 : c->H;
  sizes[2] = c->H / hk;
  sizes[3] = c->NQ;
  sizes[4] = c->NKV;
  if (axes != NULL)
    {
      g_auto (GStrv) names = g_strsplit (axes, ",", -1);

      for (guint i = 0; names[i] != NULL && rank < 5; i++)
        for (int a = 0; a < 5; a++)
          if (g_str_equal (g_strstrip (names[i]), score_axes[a]))
            {
              which[rank] = a;
              dims[rank++] = sizes[a];
            }
      for (int i = rank - 1; i >= 0; i--)
        {
          strides[which[i]] = n;
          n *= dims[i];
        }
      napkin_dtype_from_string (dtype ? dtype : fp8 ? (c->v_dtype ? c->v_dtype : c->dtype) : c->dtype, &t);
    }
  printf ("#define NP_%s %d\n#define NP_%s_T %d\n#define NP_%s_FILL %d\n#define NP_SLOT_%s %d\n#define NP_%s_N %"
          G_GINT64_FORMAT "L\n#define NP_%s_RANK %d\n", what, axes != NULL, what, dtype_code (t), what, fill, what,
          slot, what, axes ? n : 0, what, rank);
  printf ("static const long np_%s_dims[5] = { %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %"
          G_GINT64_FORMAT ", %" G_GINT64_FORMAT " };\n", lower, dims[0], dims[1], dims[2], dims[3], dims[4]);
  printf ("static const int np_%s_which[5] = { %d, %d, %d, %d, %d };\n", lower, which[0], which[1], which[2],
          which[3], which[4]);
  for (int a = 0; a < 5; a++)
    printf ("#define NP_%s_S%d %" G_GINT64_FORMAT "L\n", what, a, strides[a]);
}

int
main (int   argc,
      char *argv[])
{
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) d = NULL;
  g_autoptr(NapkinPlan) plan = NULL;
  g_autoptr(NapkinCudaModule) m = NULL;
  g_autofree char *json = NULL;
  NapkinArch *h100;
  NapkinPlanKernel *k;
  Spec s;
  int slots[6] = { -1, -1, -1, -1, -1, -1 };
  const char *names[6] = { "Q", "K", "V", "O", "B", "M" };
  double pred_ms = -1;
  guint n_maps = 0;
  gint64 hk;

  if (argc == 2 && g_str_equal (argv[1], "--list"))
    {
      for (guint i = 0; i < G_N_ELEMENTS (table); i++)
        printf ("%s\n", table[i]);
      return 0;
    }
  if (argc == 2 && g_str_equal (argv[1], "--list-scores"))
    {
      for (guint i = 0; i < G_N_ELEMENTS (score_table); i++)
        printf ("%s\n", score_table[i]);
      return 0;
    }
  if (argc == 3 && g_str_equal (argv[1], "--json"))
    {
      if (!parse (argv[2], &s, &error))
        {
          fprintf (stderr, "%s: %s\n", argv[2], error->message);
          return 2;
        }
      json = napkin_test_attention_json (&s.c);
      printf ("%s\n", json);
      spec_clear (&s);
      return 0;
    }
  if (argc != 2)
    {
      fprintf (stderr, "usage: %s --list | --list-scores | --json SPEC | SPEC\n", argv[0]);
      return 2;
    }
  if (!parse (argv[1], &s, &error))
    {
      fprintf (stderr, "%s: %s\n", argv[1], error->message);
      return 2;
    }
  json = napkin_test_attention_json (&s.c);
  d = napkin_diagram_load_from_data (json, -1, NAPKIN_LOAD_VALIDATE, &error);
  h100 = d ? napkin_arch_registry_lookup (napkin_arch_registry_get_default (), s.arch ? s.arch : "h100", &error)
            : NULL;
  plan = h100 ? napkin_plan_build (d, h100, NULL, &error) : NULL;
  if (plan == NULL)
    {
      fprintf (stderr, "%s: %s\n", s.name, error->message);
      spec_clear (&s);
      return 1;
    }
  k = (NapkinPlanKernel *) napkin_plan_kernel_for (plan, 0, -1);
  if (k == NULL || k->kind != NAPKIN_PLAN_ATTENTION)
    {
      fprintf (stderr, "%s: the plan has no attention kernel: %s\n", s.name, k && k->reason ? k->reason : "?");
      spec_clear (&s);
      return 1;
    }
  if (s.mask != NAPKIN_ATTN_MASK_NONE
      && !napkin_plan_attention_set_mask (plan, k, s.mask, s.offset, s.left, s.right, &error))
    {
      fprintf (stderr, "%s: %s\n", s.name, error->message);
      spec_clear (&s);
      return 1;
    }
  if (s.general)
    k->u.att.legacy = FALSE;
  /* the plan's diagram: casts folded, its own regions */
  m = napkin_codegen_cuda_for_plan (plan, 0, "np_", &error);
  if (m == NULL)
    {
      fprintf (stderr, "%s: %s\n", s.name, error->message);
      spec_clear (&s);
      return 1;
    }
  for (guint i = 0; i < m->kernels->len; i++)
    {
      const NapkinCudaKernel *ck = g_ptr_array_index (m->kernels, i);

      if (g_str_equal (ck->skeleton, "generic"))
        {
          fprintf (stderr, "%s: kernel %s is generic: %s\n", s.name, ck->name, ck->note ? ck->note : "");
          spec_clear (&s);
          return 1;
        }
    }
  for (guint i = 0; i < m->args->len; i++)
    {
      const NapkinIrBuffer *b = napkin_ir_buffer (m->program, g_array_index (m->args, int, i));

      for (guint t = 0; t < 6 && b->tensor >= 0; t++)
        if (g_str_equal (napkin_diagram_tensor (plan->diagram, b->tensor)->name, names[t]))
          slots[t] = (int) i;
    }

  fputs (m->source, stdout);
  hk = s.c.HK > 0 ? s.c.HK : s.c.H;
  printf ("\n/* ---- the problem as bench/gpu/attn-prims/harness.cu reads it ---- */\n");
  printf ("#define NP_NAME \"%s\"\n", s.name);
  printf ("#define NP_B %" G_GINT64_FORMAT "L\n#define NP_H %" G_GINT64_FORMAT "L\n#define NP_HK %" G_GINT64_FORMAT
          "L\n#define NP_NQ %" G_GINT64_FORMAT "L\n#define NP_NKV %" G_GINT64_FORMAT "L\n#define NP_D %" G_GINT64_FORMAT
          "L\n#define NP_BSHD %d\n", s.c.B, s.c.H, hk, s.c.NQ, s.c.NKV, s.c.D, s.c.bshd ? 1 : 0);
  printf ("#define NP_QK %d\n#define NP_V %d\n#define NP_O %d\n", dtype_code (k->u.att.dtype),
          dtype_code (k->u.att.v_dtype), dtype_code (k->u.att.o_dtype));
  printf ("#define NP_ALPHA %.17g\n", k->u.att.alpha);
  printf ("#define NP_MASK_LO %d\n#define NP_MASK_HI %d\n#define NP_LEFT %" G_GINT64_FORMAT "L\n#define NP_RIGHT %"
          G_GINT64_FORMAT "L\n#define NP_OFFSET %" G_GINT64_FORMAT "L\n",
          k->u.att.mask == NAPKIN_ATTN_MASK_WINDOW && k->u.att.window_left >= 0,
          k->u.att.mask == NAPKIN_ATTN_MASK_CAUSAL
            || (k->u.att.mask == NAPKIN_ATTN_MASK_WINDOW && k->u.att.window_right >= 0),
          MAX (k->u.att.window_left, 0), k->u.att.mask == NAPKIN_ATTN_MASK_CAUSAL ? 0 : MAX (k->u.att.window_right, 0),
          k->u.att.mask_offset);
  printf ("#define NP_SLOT_Q %d\n#define NP_SLOT_K %d\n#define NP_SLOT_V %d\n#define NP_SLOT_O %d\n", slots[0],
          slots[1], slots[2], slots[3]);
  printf ("#define NP_N_ARGS %u\n#define NP_WS_SLOT %d\n#define NP_WS_BYTES %" G_GINT64_FORMAT "L\n", m->args->len,
          m->workspace_slot, m->workspace_bytes);
  printf ("#define NP_PLAN \"%s\"\n", k->note);
  print_operand ("BIAS", &s.c, s.c.bias, s.c.bias_dtype ? s.c.bias_dtype : NULL, s.bfill, slots[4]);
  printf ("#define NP_BIAS_FIRST %d\n", s.c.bias_first ? 1 : 0);
  print_operand ("KEEP", &s.c, s.c.keep, "int8", s.kfill, slots[5]);
  /* the model's time for the diagram (a mask set on the plan afterwards is not in it) */
  if (s.mask == NAPKIN_ATTN_MASK_NONE)
    {
      g_autoptr(NapkinAnalysis) an = napkin_analyze (d, h100, NULL, NULL);

      pred_ms = an ? an->predicted_time_s * 1e3 : -1;
    }
  printf ("#define NP_PRED_MS %.4f\n", pred_ms);

  /* tensor maps, every kernel's in launch order */
  printf ("static const NpMap np_maps[] = {\n");
  for (guint i = 0; i < m->kernels->len; i++)
    {
      const NapkinCudaKernel *ck = g_ptr_array_index (m->kernels, i);

      for (guint j = 0; ck->tensor_maps != NULL && j < ck->tensor_maps->len; j++, n_maps++)
        {
          const NapkinCudaTensorMap *map = &g_array_index (ck->tensor_maps, NapkinCudaTensorMap, j);

          printf ("  { %d, %d, %" G_GINT64_FORMAT "ULL, %" G_GINT64_FORMAT "ULL, %u, %u, %u, %" G_GINT64_FORMAT "ULL, %"
                  G_GINT64_FORMAT "ULL, %" G_GINT64_FORMAT "ULL, %" G_GINT64_FORMAT "ULL },\n", map->slot,
                  dtype_code (map->dtype), map->inner, map->outer, map->box_inner, map->box_outer, map->swizzle,
                  map->ld > 0 ? map->ld : map->inner, MAX (map->batch, 1), map->batch_stride, map->offset);
        }
    }
  printf ("  { -1 } };\n#define NP_N_MAPS %u\n", n_maps);
  printf ("static void\nnp_prepare (void)\n{\n");
  for (guint i = 0; i < m->kernels->len; i++)
    {
      const NapkinCudaKernel *ck = g_ptr_array_index (m->kernels, i);

      if (ck->dynamic_smem > 0)
        printf ("  NP_CHECK (cudaFuncSetAttribute (%s, cudaFuncAttributeMaxDynamicSharedMemorySize, %" G_GINT64_FORMAT
                "));\n", ck->name, ck->dynamic_smem);
    }
  printf ("}\n\nstatic const char *np_kernels = \"");
  for (guint i = 0; i < m->kernels->len; i++)
    printf ("%s%s", i ? "+" : "", ((const NapkinCudaKernel *) g_ptr_array_index (m->kernels, i))->skeleton);
  printf ("\";\n\nstatic void\nnp_launch (const NapkinArgs &a, const NapkinTensorMap *m, cudaStream_t s)\n{\n"
          "  (void) m;\n");
  n_maps = 0;
  for (guint i = 0; i < m->kernels->len; i++)
    {
      const NapkinCudaKernel *ck = g_ptr_array_index (m->kernels, i);
      g_autoptr(GString) args = g_string_new ("a");

      for (guint j = 0; ck->tensor_maps != NULL && j < ck->tensor_maps->len; j++)
        g_string_append_printf (args, ", m[%u]", n_maps++);
      printf ("  %s<<<%" G_GINT64_FORMAT ", %u, %" G_GINT64_FORMAT ", s>>> (%s);\n", ck->name, ck->grid, ck->threads,
              ck->dynamic_smem, args->str);
    }
  printf ("}\n");
  spec_clear (&s);
  return 0;
}
