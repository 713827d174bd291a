"""Building the model and its inputs from command-line options, and the
loss: the part of the command line that scripts/dump_activations.py and
scripts/swap_test.py share (--model, --model-args, --checkpoint, --device,
--inputs, --inputs-args, --input-shape, --input-vocab, --seed; --loss).

torch is passed in by the caller (imported only once the interpreter is
settled, see common.import_torch).
"""
import json
import os
import zipfile

from .common import Fail, accepts, fmt_kw, load_callable, one_line, positional_count


# ------------------------------------------------------------------ options

def add_model_args(p):
    """The "model" and "inputs" option groups."""
    g = p.add_argument_group("model")
    g.add_argument("--model", metavar="MODULE:CALLABLE",
                   help="builds the model: package.module:callable or path/file.py:callable "
                        "(a bare helper name such as llama2c_model.py:load is also looked up "
                        "among the helper modules)")
    g.add_argument("--model-args", metavar="JSON", default="{}",
                   help="keyword arguments of the model callable, a JSON object")
    g.add_argument("--checkpoint", metavar="PATH",
                   help="weights: a state_dict, a pickled module, a TorchScript file, or "
                        "whatever the callable's checkpoint= parameter takes")
    g.add_argument("--device", default="cpu", help="torch device (default cpu)")
    g = p.add_argument_group("inputs")
    g.add_argument("--inputs", metavar="MODULE:CALLABLE",
                   help="builds the model inputs: a tensor, a tuple/list or a dict")
    g.add_argument("--inputs-args", metavar="JSON", default="{}",
                   help="keyword arguments of the inputs callable (or of the default "
                        "example_inputs), a JSON object")
    g.add_argument("--input-shape", metavar="D0,D1,...",
                   help="one random input of this shape: normal floats, or token ids with "
                        "--input-vocab")
    g.add_argument("--input-vocab", type=int, metavar="V",
                   help="with --input-shape: integer token ids in [0, V)")
    g.add_argument("--seed", type=int, default=0,
                   help="torch seed set before building the model and inputs (default 0)")
    return g


def json_object(a, opt):
    """Parses the JSON object option a.<opt> in place."""
    try:
        v = json.loads(getattr(a, opt))
    except json.JSONDecodeError as e:
        raise Fail(f"--{opt.replace('_', '-')}: not JSON ({e})")
    if not isinstance(v, dict):
        raise Fail(f"--{opt.replace('_', '-')}: expected a JSON object of keyword arguments")
    setattr(a, opt, v)


def check_model_args(a):
    """Validates and converts the model and inputs options in place."""
    if not a.model and not a.checkpoint:
        raise Fail("give --model MODULE:CALLABLE, or --checkpoint with a TorchScript file")
    for opt in ("model_args", "inputs_args"):
        json_object(a, opt)
    if a.input_vocab is not None and a.input_vocab <= 0:
        raise Fail("--input-vocab: expected a number > 0")
    if a.input_vocab is not None and not a.input_shape:
        raise Fail("--input-vocab needs --input-shape")
    if a.input_shape:
        try:
            a.input_shape = [int(s) for s in a.input_shape.split(",")]
        except ValueError:
            raise Fail(f"--input-shape: expected sizes separated by commas, got {a.input_shape!r}")
        if not a.input_shape or min(a.input_shape) <= 0:
            raise Fail("--input-shape: expected positive sizes")
        if a.inputs:
            raise Fail("give --inputs or --input-shape, not both")


# ------------------------------------------------------------------ model and inputs

def is_torchscript_file(path):
    """A torch.jit.save archive holds code/ (and constants.pkl); torch.save's
    zip files hold only data.pkl and data/."""
    if not zipfile.is_zipfile(path):
        return False
    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
    except (zipfile.BadZipFile, OSError):
        return False
    return any("/code/" in n or n.endswith("/bytecode.pkl") or n.endswith("/constants.pkl")
               for n in names)


def build_model(a, log, torch):
    """(model, scripted?, module of the --model callable or None)."""
    if a.checkpoint and not os.path.isfile(a.checkpoint):
        raise Fail(f"--checkpoint: {a.checkpoint}: no such file")
    if a.checkpoint and is_torchscript_file(a.checkpoint):
        if a.model:
            raise Fail(f"--checkpoint: {a.checkpoint} is a TorchScript file, the model by itself: "
                       "leave out --model")
        log.progress(f"loading TorchScript {a.checkpoint}")
        try:
            m = torch.jit.load(a.checkpoint, map_location=a.device)
        except Exception as e:  # noqa: BLE001
            raise Fail(f"--checkpoint: torch.jit.load({a.checkpoint}) failed: {one_line(e)} "
                       "(a bytecode-only lite-interpreter file cannot be instrumented; "
                       "re-export it with torch.jit.save)")
        return m.eval(), True, None
    if not a.model:
        # a pickled whole module is also a model by itself
        obj = torch_load(a.checkpoint, torch)
        if isinstance(obj, torch.nn.Module):
            return obj.to(a.device).eval(), False, None
        raise Fail(f"--checkpoint: {a.checkpoint} holds weights, not a model: give --model")
    ctor, mod = load_callable(a.model, "model")
    kw = dict(a.model_args)
    ckpt_to_ctor = bool(a.checkpoint) and accepts(ctor, "checkpoint") and "checkpoint" not in kw
    if ckpt_to_ctor:
        kw["checkpoint"] = a.checkpoint
    log.progress(f"building {a.model}")
    torch.manual_seed(a.seed)
    try:
        model = ctor(**kw)
    except Exception as e:  # noqa: BLE001
        raise Fail(f"--model: {a.model}({fmt_kw(kw)}) failed: {type(e).__name__}: {one_line(e)}")
    if isinstance(model, torch.jit.ScriptModule):
        if a.checkpoint and not ckpt_to_ctor:
            raise Fail(f"--model: {a.model} returned a TorchScript module, which cannot load "
                       "--checkpoint")
        return model.eval(), True, mod
    if not isinstance(model, torch.nn.Module):
        raise Fail(f"--model: {a.model} returned a {type(model).__name__}, not a torch.nn.Module")
    if a.checkpoint and not ckpt_to_ctor:
        obj = torch_load(a.checkpoint, torch)
        if isinstance(obj, torch.nn.Module):
            obj = obj.state_dict()
        sd = obj
        if isinstance(obj, dict):
            for key in ("state_dict", "model_state_dict", "model"):
                if isinstance(obj.get(key), dict):
                    sd = obj[key]
                    break
        if not isinstance(sd, dict) or not all(isinstance(v, torch.Tensor) for v in sd.values()):
            raise Fail(f"--checkpoint: {a.checkpoint}: not a state_dict (a dict of tensors, "
                       "possibly under 'state_dict' or 'model')")
        for prefix in ("_orig_mod.", "module."):
            if sd and all(k.startswith(prefix) for k in sd):
                sd = {k[len(prefix):]: v for k, v in sd.items()}
        try:
            model.load_state_dict(sd, strict=True)
        except RuntimeError as e:
            want = set(model.state_dict())
            missing, extra = sorted(want - set(sd)), sorted(set(sd) - want)
            raise Fail(f"--checkpoint: does not fit {a.model}: {len(missing)} missing keys "
                       f"{missing[:3]}, {len(extra)} unexpected {extra[:3]}"
                       if missing or extra else f"--checkpoint: {one_line(e)}")
    return model.to(a.device).eval(), False, mod


def torch_load(path, torch):
    try:
        return torch.load(path, map_location="cpu")
    except Exception as e:  # noqa: BLE001
        raise Fail(f"--checkpoint: torch.load({path}) failed: {one_line(e)}")


def build_inputs(a, model, model_mod, log, torch):
    """(args tuple, kwargs dict, description)."""
    torch.manual_seed(a.seed)
    if a.input_shape:
        g = torch.Generator().manual_seed(a.seed)
        if a.input_vocab:
            x = torch.randint(0, a.input_vocab, a.input_shape, generator=g)
            desc = f"random token ids {a.input_shape} < {a.input_vocab} (seed {a.seed})"
        else:
            x = torch.randn(a.input_shape, generator=g)
            desc = f"random normal {a.input_shape} (seed {a.seed})"
        return (x.to(a.device),), {}, desc
    method = False
    if a.inputs:
        fn, _ = load_callable(a.inputs, "inputs")
        desc = a.inputs
    elif hasattr(model, "example_inputs") and callable(model.example_inputs) \
            and not isinstance(model, torch.jit.ScriptModule):
        fn, desc, method = model.example_inputs, "model.example_inputs", True
    elif model_mod is not None and callable(getattr(model_mod, "example_inputs", None)):
        fn, desc = model_mod.example_inputs, "example_inputs"
    else:
        raise Fail("no inputs: give --inputs MODULE:CALLABLE or --input-shape (the model has no "
                   "example_inputs)")
    kw = dict(a.inputs_args)
    desc += f"({fmt_kw(kw)})"
    if not method and accepts(fn, "model") and "model" not in kw:
        kw["model"] = model
    log.progress(f"building inputs: {desc}")
    try:
        x = fn(**kw)
    except Exception as e:  # noqa: BLE001
        raise Fail(f"inputs: {desc} failed: {type(e).__name__}: {one_line(e)}")
    if isinstance(x, torch.Tensor):
        args, kwargs = (x,), {}
    elif isinstance(x, (tuple, list)):
        args, kwargs = tuple(x), {}
    elif isinstance(x, dict):
        args, kwargs = (), dict(x)
    else:
        raise Fail(f"inputs: {desc} returned a {type(x).__name__}, expected a tensor, a tuple "
                   "or a dict")
    mv = lambda v: v.to(a.device) if isinstance(v, torch.Tensor) else v  # noqa: E731
    return tuple(mv(v) for v in args), {k: mv(v) for k, v in kwargs.items()}, desc


def model_output_tensor(out, torch):
    if isinstance(out, torch.Tensor):
        return out
    if isinstance(out, dict) or hasattr(out, "keys"):
        for key in ("logits", "last_hidden_state", "prediction_logits", "out", "output"):
            try:
                v = out[key]
            except (KeyError, TypeError, IndexError):
                continue
            if isinstance(v, torch.Tensor):
                return v
        for v in out.values():
            if isinstance(v, torch.Tensor) and v.is_floating_point():
                return v
    if isinstance(out, (tuple, list)):
        for v in out:
            if isinstance(v, torch.Tensor) and v.is_floating_point():
                return v
    raise Fail(f"cannot find a floating-point tensor in the model's output "
               f"({type(out).__name__}); give --loss", 1)


def compute_loss(spec, out, args, kwargs, torch, need_grad=True, extra=None):
    """The scalar loss of the model output `out`: spec (MODULE:CALLABLE, or
    the callable itself)
    called as loss(out) or loss(out, inputs), with extra keyword arguments
    (labels=...) when it names them; without spec, the sum of squares of
    the output. inputs: the one positional input, else the kwargs dict or
    the args tuple."""
    if spec:
        fn = spec if callable(spec) else load_callable(spec, "loss")[0]
        inputs = args[0] if len(args) == 1 and not kwargs else (kwargs if not args else args)
        kw = {k: v for k, v in (extra or {}).items() if accepts(fn, k)}
        try:
            loss = fn(out, inputs, **kw) if positional_count(fn) >= 2 else fn(out, **kw)
        except Exception as e:  # noqa: BLE001
            raise Fail(f"--loss: {callable_name(spec)} failed: {type(e).__name__}: "
                       f"{one_line(e)}", 1)
    else:
        loss = model_output_tensor(out, torch).float().pow(2).sum()
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        raise Fail("--loss: expected a scalar tensor", 1)
    if need_grad and not loss.requires_grad:
        raise Fail("--grad: the loss does not depend on anything that requires a gradient", 1)
    return loss.reshape(())


def callable_name(spec):
    """A MODULE:CALLABLE spec as given, or a Python callable's name."""
    if isinstance(spec, str):
        return spec
    mod = getattr(spec, "__module__", None)
    name = getattr(spec, "__qualname__", None) or type(spec).__name__
    return f"{mod}:{name}" if mod else name
