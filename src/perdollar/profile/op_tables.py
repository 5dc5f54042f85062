"""Lookup tables for aten operators: which to skip, which class each belongs to, FLOPs per element."""

from __future__ import annotations

from perdollar.profile.model import OperatorClass

# fmt: off
# Operators that move no data (metadata, aliasing, bookkeeping, the synthetic batch): not profiled.
IGNORED = frozenset({
    "aten._local_scalar_dense", "aten._unsafe_view", "aten.alias", "aten.detach", "aten.empty",
    "aten.empty_like", "aten.empty_strided", "aten.is_same_size", "aten.lift_fresh", "aten.new_empty",
    "aten.new_empty_strided", "aten.rand", "aten.randint", "aten.randn", "aten.randperm",
    "aten.resize_", "aten.set_", "aten.sym_numel", "aten.sym_size", "aten.sym_stride",
    "aten.unsafe_chunk", "aten.unsafe_split", "aten.unsafe_split_with_sizes",
})

_NAMES_BY_CLASS: dict[OperatorClass, tuple[str, ...]] = {
    "matmul": (
        "mm", "addmm", "bmm", "baddbmm", "_scaled_mm", "addmv", "mv", "dot", "matmul", "linear",
        "_addmm_activation",
    ),
    "conv": (
        "convolution", "_convolution", "convolution_backward", "cudnn_convolution",
        "mkldnn_convolution", "_slow_conv2d_forward", "_slow_conv2d_backward",
        "convolution_overrideable",
    ),
    "attention": (
        "_scaled_dot_product_flash_attention", "_scaled_dot_product_flash_attention_backward",
        "_scaled_dot_product_flash_attention_for_cpu",
        "_scaled_dot_product_flash_attention_for_cpu_backward",
        "_scaled_dot_product_efficient_attention", "_scaled_dot_product_efficient_attention_backward",
        "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_cudnn_attention_backward",
        "_flash_attention_forward", "_flash_attention_backward", "_efficient_attention_forward",
        "_efficient_attention_backward", "_scaled_dot_product_attention_math",
    ),
    "normalization": (
        "native_layer_norm", "native_layer_norm_backward", "native_batch_norm",
        "native_batch_norm_backward", "_native_batch_norm_legit",
        "_native_batch_norm_legit_functional", "_native_batch_norm_legit_no_training",
        "native_group_norm", "native_group_norm_backward", "_fused_rms_norm",
        "_fused_rms_norm_backward", "batch_norm_backward", "cudnn_batch_norm",
        "cudnn_batch_norm_backward",
    ),
    "embedding": (
        "embedding", "embedding_dense_backward", "embedding_backward", "_embedding_bag",
        "index_select", "_embedding_bag_backward",
    ),
    "pooling": (
        "max_pool2d_with_indices", "max_pool2d_with_indices_backward", "avg_pool2d",
        "avg_pool2d_backward", "_adaptive_avg_pool2d", "_adaptive_avg_pool2d_backward",
        "adaptive_max_pool2d", "adaptive_max_pool2d_backward", "max_pool3d_with_indices", "avg_pool3d",
    ),
    "loss": (
        "nll_loss_forward", "nll_loss_backward", "nll_loss2d_forward", "nll_loss2d_backward",
        "binary_cross_entropy", "binary_cross_entropy_backward", "binary_cross_entropy_with_logits",
        "mse_loss", "mse_loss_backward", "smooth_l1_loss", "huber_loss",
    ),
    "reduction": (
        "sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "_softmax", "_log_softmax",
        "_safe_softmax", "_softmax_backward_data", "_log_softmax_backward_data", "var_mean", "var",
        "std", "norm", "linalg_vector_norm", "cumsum", "prod", "logsumexp", "all", "any", "topk",
        "sort",
    ),
    "recurrent": (
        "mkldnn_rnn_layer", "mkldnn_rnn_layer_backward", "_cudnn_rnn", "_cudnn_rnn_backward",
        "_thnn_fused_lstm_cell", "_thnn_fused_lstm_cell_backward_impl", "_thnn_fused_gru_cell", "lstm",
        "gru", "rnn_tanh", "rnn_relu",
    ),
    "copy": (
        "_to_copy", "copy_", "clone", "cat", "stack", "zeros", "zeros_like", "ones", "ones_like",
        "full", "full_like", "new_zeros", "new_ones", "new_full", "fill_", "zero_", "constant_pad_nd",
        "index", "gather", "scatter", "scatter_add", "scatter_", "index_put_", "index_add",
        "_index_put_impl_", "slice_backward", "select_backward", "as_strided_scatter",
        "select_scatter", "slice_scatter", "repeat", "roll", "flip", "tril", "triu", "masked_scatter",
        "arange", "scalar_tensor", "split_with_sizes_copy", "unbind_copy", "_foreach_copy_",
        "index_copy", "narrow_copy", "_reshape_copy", "expand_copy", "permute_copy", "view_copy",
    ),
}
CLASS_BY_NAME: dict[str, OperatorClass] = {
    f"aten.{name}": op_class for op_class, names in _NAMES_BY_CLASS.items() for name in names
}

# FLOPs per output element for operators that are not GEMMs (rough: a transcendental costs more).
FLOPS_PER_ELEMENT: dict[str, float] = {
    "aten.gelu": 8, "aten.gelu_backward": 12, "aten.silu": 5, "aten.silu_backward": 8, "aten.tanh": 5,
    "aten.tanh_backward": 3, "aten.sigmoid": 4, "aten.sigmoid_backward": 3, "aten.exp": 4,
    "aten.log": 4, "aten.erf": 8, "aten.rsqrt": 2, "aten.sqrt": 2, "aten.pow": 2, "aten.addcmul_": 2,
    "aten.addcdiv_": 3, "aten.addcmul": 2, "aten.addcdiv": 3, "aten.lerp_": 2,
    "aten.native_layer_norm": 8, "aten.native_layer_norm_backward": 14,
    "aten._native_batch_norm_legit_functional": 8, "aten._native_batch_norm_legit": 8,
    "aten.native_batch_norm": 8, "aten.native_batch_norm_backward": 14, "aten.native_group_norm": 8,
    "aten.native_group_norm_backward": 14, "aten._softmax": 5, "aten._safe_softmax": 5,
    "aten._log_softmax": 5, "aten._softmax_backward_data": 4, "aten._log_softmax_backward_data": 4,
    "aten.cos": 4, "aten.sin": 4, "aten.native_dropout": 2,
}
# fmt: on
