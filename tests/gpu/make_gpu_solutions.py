#!/usr/bin/env python3
"""Writes the solution.json of every bundled GPU solution from its source file.

The sources (problems/*/solutions/cuda_*.cu, torch_gpu_*.py and the validation
solutions under tests/gpu/problems/) are what people edit; the JSON embeds them
in the public solution format. Run after editing a source:
    python3 tests/gpu/make_gpu_solutions.py          # rewrite
    python3 tests/gpu/make_gpu_solutions.py --check  # exit 1 when a JSON is stale
"""
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

CUBLAS = {"dependencies": ["cublas"], "ld_flags": ["-lcublas", "-lcublasLt"]}

# (problem folder, source file, entry function, extra, description)
NATIVE = [
    ("problems/001_rmsnorm_llama3_8b_h4096", "cuda_rmsnorm.cu", "rmsnorm", {},
     "RMSNorm, one block per row, 16-byte loads, float32 math."),
    ("problems/002_swiglu_activation_llama3_8b", "cuda_swiglu.cu", "swiglu", {},
     "SwiGLU elementwise, 16-byte vectors, grid-stride."),
    ("problems/003_rope_apply_llama3_8b_gqa", "cuda_rope.cu", "rope_apply", {},
     "RoPE rotate_half on q and k, one thread per (d, d+64) pair."),
    ("problems/004_gemm_bf16_llama3_8b_qkv_proj", "cuda_cublas_gemm.cu", "gemm_bf16", CUBLAS,
     "bf16 GEMM through cublasGemmEx (float32 accumulation) on the given stream."),
    ("problems/005_softmax_vocab_llama3_8b", "cuda_softmax.cu", "softmax_vocab", {},
     "Vocabulary softmax, one 1024-thread block per row, online max/sum."),
    ("problems/006_gqa_attention_prefill_causal_llama3_8b", "cuda_attention.cu", "gqa_attention", {},
     "Tiled causal GQA attention with online softmax on CUDA cores (float32 math)."),
    ("problems/007_mamba2_selective_state_update_decode", "cuda_ssm_update.cu", "ssm_update", {},
     "Mamba-2 state update, one warp per state row."),
    ("problems/008_moe_topk_router_mixtral_8x7b", "cuda_router.cu", "moe_router", {},
     "MoE router: block-reduced logits, softmax, top-2, renormalisation."),
    ("tests/gpu/problems/copy_1gib", "cuda_copy.cu", "copy_f32", {},
     "Bandwidth copy with 16-byte accesses (timer validation)."),
    ("tests/gpu/problems/copy_1gib", "cuda_copy_side_stream.cu", "copy_f32_side_stream", {},
     "Copy launched on the solution's own stream, not joined (side-stream timing validation)."),
    ("tests/gpu/problems/scale_5us", "cuda_scale.cu", "scale2", {},
     "y = 2x, a ~5 us kernel at 2M elements (timer validation)."),
    ("tests/gpu/problems/scale_5us", "cuda_scale_crash.cu", "scale2_crash", {},
     "Faults with an illegal address on the 4096-element workload only (crash containment)."),
    ("tests/gpu/problems/gemm_bf16_8192", "../../../../../problems/004_gemm_bf16_llama3_8b_qkv_proj/solutions/cuda_cublas_gemm.cu",
     "gemm_bf16", CUBLAS, "bf16 GEMM through cublasGemmEx (validation: 8192^3)."),
]

TORCH = [
    ("problems/001_rmsnorm_llama3_8b_h4096", "torch_gpu_rmsnorm.py"),
    ("problems/002_swiglu_activation_llama3_8b", "torch_gpu_swiglu.py"),
    ("problems/003_rope_apply_llama3_8b_gqa", "torch_gpu_rope.py"),
    ("problems/004_gemm_bf16_llama3_8b_qkv_proj", "torch_gpu_gemm.py"),
    ("problems/005_softmax_vocab_llama3_8b", "torch_gpu_softmax.py"),
    ("problems/006_gqa_attention_prefill_causal_llama3_8b", "torch_gpu_attention.py"),
    ("problems/007_mamba2_selective_state_update_decode", "torch_gpu_ssm_update.py"),
    ("problems/008_moe_topk_router_mixtral_8x7b", "torch_gpu_router.py"),
]

# (problem folder, source file, description): Python-family solutions in Triton.
TRITON = [
    ("problems/001_rmsnorm_llama3_8b_h4096", "triton_rmsnorm.py",
     "Triton, one program per row (destination-passing: writes the given outputs)."),
]


# (problem folder, source file, destination-passing, description): solutions that
# declare only "pytorch" but bring Triton kernels or torch.compile, as agent-written
# solutions of the public set do (issue #12: toolchains inside the sandbox).
PYTORCH_TOOLCHAINS = [
    ("problems/001_rmsnorm_llama3_8b_h4096", "pytorch_triton_autotune.py", True,
     "Language pytorch with an autotuned Triton kernel inside."),
    ("problems/001_rmsnorm_llama3_8b_h4096", "pytorch_compile_rmsnorm.py", False,
     "torch.compile (Inductor) of a plain PyTorch RMSNorm."),
    ("problems/002_swiglu_activation_llama3_8b", "pytorch_triton_swiglu.py", True,
     "Language pytorch with a plain Triton kernel inside."),
    ("problems/002_swiglu_activation_llama3_8b", "pytorch_compile_swiglu.py", False,
     "torch.compile with max-autotune-no-cudagraphs (Inductor autotunes its Triton kernels)."),
]


def definition_name(problem: pathlib.Path) -> str:
    return json.loads((problem / "definition.json").read_text())["name"]


def solution(pdir, name, desc, spec, file_name, content):
    """(path of the JSON, the solution) in the public format, one source file."""
    sol = {
        "name": f"{definition_name(pdir)}__{name}",
        "definition": definition_name(pdir),
        "author": "solbench",
        "description": desc,
        "spec": spec,
        "sources": [{"path": file_name, "content": content}],
    }
    return pdir / "solutions" / f"{name}.json", sol


def native(problem, src, entry, extra, desc):
    pdir = ROOT / problem
    src_path = (pdir / "solutions" / src).resolve()
    name = "cuda_cublas_gemm" if src.startswith("..") else pathlib.Path(src).stem
    co = {"cflags": [], "cuda_cflags": ["-O3", "--use_fast_math"],
          "ld_flags": extra.get("ld_flags", [])}
    spec = {
        "languages": ["cuda_cpp"],
        "target_hardware": ["cuda"],
        "entry_point": f"{src_path.name}::{entry}",
        "destination_passing_style": True,
        "binding": "native",
        "dependencies": extra.get("dependencies", []),
        "compile_options": co,
    }
    return solution(pdir, name, desc, spec, src_path.name, src_path.read_text())


def torch_sol(problem, src, language="pytorch",
              desc="PyTorch on the GPU (destination-passing: writes the given outputs).", dps=True):
    pdir = ROOT / problem
    spec = {
        "languages": [language],
        "target_hardware": ["cuda"],
        "entry_point": f"{src}::run",
        "destination_passing_style": dps,
        "dependencies": ["torch"] + (["triton"] if language == "triton" else []),
    }
    return solution(pdir, pathlib.Path(src).stem, desc, spec, src, (pdir / "solutions" / src).read_text())


def main() -> int:
    check = "--check" in sys.argv[1:]
    stale = 0
    items = [native(*n) for n in NATIVE] + [torch_sol(*t) for t in TORCH]
    items += [torch_sol(p, src, "triton", desc) for p, src, desc in TRITON]
    items += [torch_sol(p, src, "pytorch", desc, dps) for p, src, dps, desc in PYTORCH_TOOLCHAINS]
    for item in items:
        path, sol = item
        text = json.dumps(sol, indent=2) + "\n"
        if check:
            if not path.exists() or path.read_text() != text:
                print(f"stale: {path.relative_to(ROOT)}")
                stale += 1
        else:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
