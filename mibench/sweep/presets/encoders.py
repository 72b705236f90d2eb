"""Sweep presets for the paper's §5.7 (deep representations), in the format of :mod:`mibench.sweep.presets`
(merged into its ``PRESETS`` there).

* ``encoders``: raw inputs vs. the invertible maps RealNVP / MAF / i-RevNet applied to X and Y, on
  images and on sentence embeddings (paper Fig. 11).  True MI unchanged (exact).
* ``resnet-layers``: features of each layer of the trained ResNet (``--layer stem .. pool``) plus
  the raw canvas, vision task without nuisance (paper Fig. 6).  Truth: the data-processing bound
  I(X; Y), exact where the ResNet decodes every source (its accuracy is in each run's task_info).
  Train the ResNet once before a parallel sweep: ``mibench encoders train-resnet --layout 1x2x2
  --side 16`` (quick) or ``--ds 10`` (full), otherwise each worker may train its own copy.

The quick forms are the CPU sizes used for ``results/studies`` (constant 2 bits, a 2 x 64 joint
critic, 800-1000 steps, one seed); the full forms follow the paper's protocol (stepwise 2-10 bits,
20,000 steps, 2 x 256 critic, all 8 estimators, 3 seeds) and are meant for a GPU.
"""
from __future__ import annotations

LAYERS = ["stem", "layer1", "layer2", "layer3", "layer4", "pool"]
_ALL8 = ["nwj", "js", "infonce", "dv", "mine", "smile-1", "smile-5", "smile-inf"]
_FULL = {"steps": 20_000, "mi": "stepwise", "seeds": [0, 1, 2], "batch_size": 64, "lr": 5e-4, "hidden": 256,
         "layers": 2, "critics": ["joint"], "estimators": _ALL8}
_QUICK = {"steps": 1000, "mi": 2, "seeds": [0], "batch_size": 64, "lr": 5e-4, "hidden": 64, "layers": 2,
          "critics": ["joint"], "estimators": ["infonce", "mine", "smile-5"]}
_TRANSFORMS = ["none", "realnvp", "maf", "irevnet"]

PRESETS: dict[str, dict] = {
    "encoders": {
        "section": "5.7",
        "description": "invertible encoders g (RealNVP, MAF, i-RevNet; random fixed weights) applied to X and Y: "
                       "I(g(X); g(Y)) = I(X; Y); images and sentence embeddings (paper Fig. 11)",
        "full": {**_FULL, "tasks": [{"task": "vision", "params": {"ds": 10, "transform": _TRANSFORMS}},
                                    {"task": "text", "params": {"ds": 10, "transform": _TRANSFORMS}}]},
        "quick": {**_QUICK, "tasks": [
            {"task": "vision", "params": {"layout": "1x2x2", "side": 16, "transform": _TRANSFORMS}},
            {"task": "text", "params": {"ds": 4, "transform": _TRANSFORMS}}]},
    },
    "resnet-layers": {
        "section": "5.7",
        "description": "features of each ResNet layer (narrow ResNet-18 trained by mibench to decode the sources; "
                       "the paper uses ResNet-50) vs. the raw canvas, vision without nuisance (paper Fig. 6)",
        "full": {**_FULL, "tasks": [{"task": "vision", "params": {"ds": 10, "transform": "resnet", "layer": LAYERS}},
                                    {"task": "vision", "params": {"ds": 10}}]},
        "quick": {**_QUICK, "steps": 800, "tasks": [
            {"task": "vision", "params": {"layout": "1x2x2", "side": 16, "transform": "resnet", "layer": LAYERS}},
            {"task": "vision", "params": {"layout": "1x2x2", "side": 16}}]},
    },
}
