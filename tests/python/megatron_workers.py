"""Rank-side bodies of the Megatron-Core tests: a GPTModel from Megatron-Core's local spec and
one from the Domino spec, the local model's state dict loaded into the Domino one, the same
batch through both; each rank compares the loss and every gradient (names and shards are the
same). Real Megatron-Core 0.16.1 on CPU, adapted by torch_domino.megatron.cpu alone."""

from __future__ import annotations

import warnings

warnings.filterwarnings("ignore")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

VOCAB, SEQ, BATCH = 128, 16, 4
SCHEDULES = {"row": dict(split="row", micro_batches=2),
             "column": dict(split="column", column_chunks=2),
             "2d": dict(split="2d", micro_batches=2, column_chunks=2),
             "none": dict(split="none")}


def _init(tp: int, device: str = "cpu") -> None:
    """Megatron's parallel state; on CUDA as a GPU user sets it up (the rank's device, the
    model-parallel CUDA generators), on the CPU through torch_domino.megatron.cpu."""
    from megatron.core import parallel_state, tensor_parallel

    from torch_domino.megatron.cpu import use_cpu
    if device == "cuda":
        torch.cuda.set_device(dist.get_rank() % torch.cuda.device_count())
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    if not parallel_state.model_parallel_is_initialized():
        parallel_state.initialize_model_parallel(tensor_model_parallel_size=tp)
        if device == "cuda":
            tensor_parallel.model_parallel_cuda_manual_seed(1234)
        else:
            use_cpu()


def config(kind: str, tp: int, sp: bool, **changes):
    from megatron.core.transformer.transformer_config import TransformerConfig
    shape = dict(num_layers=2, hidden_size=64, hidden_dropout=0.0, attention_dropout=0.0,
                 use_cpu_initialization=True, tensor_model_parallel_size=tp, sequence_parallel=sp)
    if kind == "gpt":  # LayerNorm, exact gelu, biases everywhere
        shape.update(num_attention_heads=4, ffn_hidden_size=256, normalization="LayerNorm",
                     activation_func=F.gelu, add_bias_linear=True)
    else:  # Llama: RMSNorm, SwiGLU, GQA, rotary, no bias
        shape.update(num_attention_heads=8, num_query_groups=4, ffn_hidden_size=128,
                     normalization="RMSNorm", activation_func=F.silu, gated_linear_unit=True,
                     add_bias_linear=False)
    shape.update(changes)
    return TransformerConfig(**shape)


def local_spec(cfg):
    """Megatron-Core's own layers; under sequence parallelism with norms that take it (its torch
    norm refuses it on a machine without Transformer Engine or Apex)."""
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer.transformer_block import TransformerBlockSubmodules

    from torch_domino.megatron import SequenceParallelNorm
    spec = get_gpt_layer_local_spec(normalization=cfg.normalization)
    if not cfg.sequence_parallel:
        return spec
    spec.submodules.input_layernorm = SequenceParallelNorm
    spec.submodules.pre_mlp_layernorm = SequenceParallelNorm
    return TransformerBlockSubmodules(layer_specs=[spec] * cfg.num_layers,
                                      layer_norm=SequenceParallelNorm)


def gpt(cfg, spec, kind: str):
    """A GPTModel; on a GPU moved to the current device, as Megatron's training loop does
    (some of its modules are made on the CPU whatever the config says)."""
    from megatron.core.models.gpt import GPTModel
    model = GPTModel(config=cfg, transformer_layer_spec=spec, vocab_size=VOCAB,
                     max_sequence_length=SEQ,
                     position_embedding_type="rope" if kind == "llama" else "learned_absolute")
    return model if cfg.use_cpu_initialization else model.cuda(torch.cuda.current_device())


def batch(seed: int = 99, device: str = "cpu"):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)
    labels = torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)
    positions = torch.arange(SEQ).unsqueeze(0).expand(BATCH, SEQ)
    mask = torch.ones(SEQ, SEQ, dtype=torch.bool).triu(1).view(1, 1, SEQ, SEQ)
    return tuple(t.to(device) for t in (tokens, positions, mask, labels))


def _device_of(model) -> str:
    return next(model.parameters()).device.type


def step(model):
    tokens, positions, mask, labels = batch(device=_device_of(model))
    model.zero_grad(set_to_none=True)
    loss = model(tokens, positions, mask, labels=labels).float().mean()
    loss.backward()
    return loss.item(), {n: p.grad.detach().clone() for n, p in model.named_parameters()
                         if p.grad is not None}


def _finalize(model, grads):
    """What finalize_model_grads does for Megatron's own layers under sequence parallelism: sum
    the gradients of parameters marked sequence_parallel over the tensor-parallel group."""
    from megatron.core import parallel_state
    group = parallel_state.get_tensor_model_parallel_group()
    for name, param in model.named_parameters():
        if getattr(param, "sequence_parallel", False) and name in grads:
            dist.all_reduce(grads[name], group=group)


def _worst(a: dict, b: dict) -> tuple[float, str]:
    if set(a) != set(b):
        return float("inf"), f"parameters differ: {sorted(set(a) ^ set(b))[:4]}"
    worst, where = 0.0, ""
    for name in a:
        err = ((a[name] - b[name]).abs().max() / b[name].abs().max().clamp(min=1e-3)).item()
        if err >= worst:
            worst, where = err, name
    return worst, where


def against_local_spec(rank: int, world: int, kinds: list, schedules: list,
                       device: str = "cpu") -> list:
    """Loss and gradients of the Domino spec against the local spec, the same weights. On CUDA
    both models are built where Megatron-Core builds them there (use_cpu_initialization off: on
    the current device), and each report says where the Domino model's parameters are."""
    from torch_domino.megatron import get_gpt_layer_domino_spec
    _init(world, device)
    reports = []
    for kind in kinds:
        for sp in ([False, True] if world > 1 else [False]):
            cfg = config(kind, world, sp, use_cpu_initialization=device == "cpu")
            torch.manual_seed(1234)
            local = gpt(cfg, local_spec(cfg), kind)
            want_loss, want = step(local)
            if sp:
                _finalize(local, want)
            state = local.state_dict()
            for name in schedules:
                domino = gpt(cfg, get_gpt_layer_domino_spec(**SCHEDULES[name], config=cfg), kind)
                missing = domino.load_state_dict(state, strict=True)
                loss, grads = step(domino)
                worst, where = _worst(grads, want)
                reports.append({"case": f"{kind} {name} sp={sp}", "loss": loss,
                                "want_loss": want_loss, "grad": worst, "where": where,
                                "load": str(missing),
                                "devices": sorted({p.device.type for p in domino.parameters()})})
            # And back: the Domino model's state dict loads into the local spec.
            fresh = gpt(cfg, local_spec(cfg), kind)
            fresh.load_state_dict(domino.state_dict(), strict=True)
            back_loss, _ = step(fresh)
            reports.append({"case": f"{kind} back sp={sp}", "loss": back_loss,
                            "want_loss": want_loss, "grad": 0.0, "where": "", "load": ""})
    return reports


def full_recompute(rank: int, world: int, kinds: list, methods: list) -> list:
    """Megatron's full-layer recompute (recompute_granularity="full", one layer per checkpoint)
    through the Domino spec against the same model without it, with and without sequence
    parallelism: built under the same seed (the weights, and each layer's dropout seed), the same
    batch and generator state, dropout on. Reports whether the loss and every gradient are the
    same bits (and whether two steps without recompute are), how many times each layer's forward
    ran in the step, and the control: the largest gradient difference when Megatron's checkpoint
    does not restore the generators before recomputing (so it draws other dropout masks)."""
    from megatron.core.tensor_parallel import random as megatron_random

    from torch_domino.megatron import DominoLayer, get_gpt_layer_domino_spec
    _init(world)
    dropout = dict(hidden_dropout=0.2, attention_dropout=0.2)

    def build(cfg, kind):
        torch.manual_seed(1234)
        return gpt(cfg, get_gpt_layer_domino_spec(split="row", micro_batches=2, config=cfg), kind)

    def run(model):
        layers = [m for m in model.modules() if isinstance(m, DominoLayer)]
        calls = [0] * len(layers)
        hooks = [layer.register_forward_hook(lambda *_, i=i: calls.__setitem__(i, calls[i] + 1))
                 for i, layer in enumerate(layers)]
        torch.manual_seed(5)  # the embedding's and the layers' dropout draws
        loss, grads = step(model)
        for hook in hooks:
            hook.remove()
        return loss, grads, calls

    def same(a, b):
        return set(a) == set(b) and all(torch.equal(a[n], b[n]) for n in b)

    reports = []
    for kind, sp in [(k, sp) for k in kinds for sp in ([False, True] if world > 1 else [False])]:
        plain = build(config(kind, world, sp, **dropout), kind)
        want_loss, want, plain_calls = run(plain)
        again_loss, again, _ = run(plain)
        for method in methods:
            model = build(config(kind, world, sp, recompute_granularity="full",
                                 recompute_method=method, recompute_num_layers=1, **dropout), kind)
            loss, grads, calls = run(model)
            # The control: the same step with the generators left as the forward left them.
            restore = megatron_random._set_all_rng_states
            megatron_random._set_all_rng_states = lambda *states: None
            try:
                _, unrestored, _ = run(model)
            finally:
                megatron_random._set_all_rng_states = restore
            reports.append({"case": f"{kind} {method} sp={sp}", "loss": loss,
                            "want_loss": want_loss,
                            "exact": loss == want_loss and same(grads, want),
                            "plain_repeatable": again_loss == want_loss and same(again, want),
                            "grad": _worst(grads, want)[0], "calls": calls,
                            "plain_calls": plain_calls,
                            "unrestored_grad": _worst(unrestored, want)[0]})
    return reports


def refusals(rank: int, world: int) -> dict:
    from torch_domino.megatron import get_gpt_layer_domino_spec
    _init(world)
    said = {}
    for label, changes, schedule in (
            ("qk_layernorm", dict(qk_layernorm=True), {}),
            ("kv_channels", dict(kv_channels=8), {}),
            ("activation", dict(activation_func=F.relu), {}),
            ("inter", {}, dict(overlap="inter"))):
        try:
            get_gpt_layer_domino_spec(**schedule, config=config("gpt", world, False, **changes))
            said[label] = ""
        except ValueError as error:
            said[label] = str(error)
    return said


def dist_checkpoint_save(rank: int, world: int, path: str, kind: str, sp: bool,
                         domino_spec: bool) -> list:
    """A model at TP `world` saved by megatron.core.dist_checkpointing; its logits returned."""
    from megatron.core import dist_checkpointing

    from torch_domino.megatron import get_gpt_layer_domino_spec
    _init(world)
    cfg = config(kind, world, sp)
    torch.manual_seed(7)
    spec = get_gpt_layer_domino_spec(config=cfg) if domino_spec else local_spec(cfg)
    model = gpt(cfg, spec, kind)
    dist_checkpointing.save(model.sharded_state_dict(), path)
    return _logits(model)


def dist_checkpoint_load(rank: int, world: int, path: str, kind: str, domino_spec: bool) -> list:
    from megatron.core import dist_checkpointing

    from torch_domino.megatron import get_gpt_layer_domino_spec
    _init(world)
    cfg = config(kind, world, False)
    torch.manual_seed(8)  # other weights: the load must replace them
    spec = get_gpt_layer_domino_spec(config=cfg) if domino_spec else local_spec(cfg)
    model = gpt(cfg, spec, kind)
    model.load_state_dict(dist_checkpointing.load(model.sharded_state_dict(), path))
    return _logits(model)


def _logits(model) -> list:
    """The whole logits, gathered over the tensor-parallel ranks' vocabulary shards."""
    from megatron.core import parallel_state
    tokens, positions, mask, _ = batch()
    model.eval()
    with torch.no_grad():
        logits = model(tokens, positions, mask)
    group = parallel_state.get_tensor_model_parallel_group()
    parts = [torch.empty_like(logits) for _ in range(dist.get_world_size(group))]
    dist.all_gather(parts, logits.contiguous(), group=group)
    return torch.cat(parts, -1).tolist()
