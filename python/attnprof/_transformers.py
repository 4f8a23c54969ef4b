"""attnprof.attention inside Hugging Face transformers models: an attention implementation registered
through transformers' AttentionInterface, so a model trains or infers on the fused kernels with
``attn_implementation="attnprof"``. transformers and torch are imported only when registering."""

from typing import Optional


def transformers_attention(module, query, key, value, attention_mask, scaling: Optional[float] = None,
                           dropout: float = 0.0, is_causal: Optional[bool] = None, **kwargs):
    """The attention function transformers calls per layer (its sdpa_attention_forward's signature):
    query [B, Hq, Sq, D], key and value [B, Hkv, Skv, D] (GQA read in place, no repeated heads), the
    output [B, Sq, Hq, D] and no weights. Causal layers are causal bottom-right (query i sees keys up to
    i + Skv - Sq: a prefill, a training step, and decode against a cache alike; one query sees every
    key). Under autocast, fp32 inputs run in the autocast dtype. Raises ValueError for what the kernels
    do not take: a padding or custom mask (attention_mask not None), attention dropout, output_attentions."""
    import torch

    from ._torch import attention

    if attention_mask is not None:
        raise ValueError("attnprof attention: takes causal or full attention without a mask; this batch has padding "
                         "or a custom mask (use attn_implementation='sdpa' for it)")
    if dropout and module.training:
        raise ValueError(f"attnprof attention: has no attention dropout (the model asks for {dropout})")
    if kwargs.get("output_attentions", False):
        raise ValueError("attnprof attention: computes no attention weights (output_attentions=True)")
    if query.dtype == torch.float32 and torch.is_autocast_enabled("cuda"):
        dtype = torch.get_autocast_dtype("cuda")
        query, key, value = (t.to(dtype) for t in (query, key, value))
    causal = (is_causal if is_causal is not None else getattr(module, "is_causal", True)) and query.shape[2] > 1
    out = attention(query, key, value, is_causal=causal, scale=scaling, bottom_right=causal)
    return out.transpose(1, 2).contiguous(), None


def register_transformers(name: str = "attnprof") -> str:
    """Registers transformers_attention as attention implementation `name` (and transformers' mask
    for it: none unless there is padding), so that ``from_pretrained(..., attn_implementation=name)``
    or ``model.set_attn_implementation(name)`` runs it. Returns the name."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface

    AttentionInterface.register(name, transformers_attention)
    AttentionMaskInterface.register(name, AttentionMaskInterface._global_mapping["flash_attention_2"])
    return name
