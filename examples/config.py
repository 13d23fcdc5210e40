"""The sizes the example model comes in: `tiny` for CPU tests, `pi05` for the real shapes."""

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ExampleSize(BaseModel):
    """Every width and count that shapes one pi0.5-shaped example model."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="how the CLI and the parity drivers call this size")
    width: int = Field(description="hidden width of the prefix encoder and the action expert")
    mlp_width: int = Field(description="inner width of the gated-GELU MLPs")
    query_heads: int = Field(description="attention query heads")
    kv_heads: int = Field(description="attention key/value heads (grouped-query attention)")
    head_dim: int = Field(description="width of one attention head")
    prefix_layers: int = Field(description="transformer layers of the prefix encoder")
    expert_layers: int = Field(description="transformer layers of the action expert")
    image_tokens: int = Field(description="image patches per example, all images together")
    text_tokens: int = Field(description="prompt tokens per example")
    vocabulary: int = Field(description="prompt token vocabulary size")
    patch_dim: int = Field(description="flattened pixels of one image patch")
    vision_width: int = Field(description="width of the vision MLP")
    vision_mlp_width: int = Field(description="inner width of the vision MLP block")
    action_tokens: int = Field(description="actions predicted per example (the action horizon)")
    action_dim: int = Field(description="numbers in one action")
    denoise_steps: int = Field(default=10, description="flow-matching Euler steps from noise")
    needs_cuda: bool = Field(description="too large for the Triton interpreter on a CPU")

    @model_validator(mode="after")
    def _expert_layers_match_cache(self) -> "ExampleSize":
        if self.expert_layers != self.prefix_layers:
            raise ValueError("expert_layers: each expert layer reads one prefix layer's cache")
        if self.query_heads % self.kv_heads:
            raise ValueError("query_heads: must be a multiple of kv_heads")
        return self

    @property
    def prefix_tokens(self) -> int:
        return self.image_tokens + self.text_tokens

    @property
    def attention_scale(self) -> float:
        return self.head_dim**-0.5


TINY = ExampleSize(
    name="tiny",
    width=64,
    mlp_width=128,
    query_heads=4,
    kv_heads=1,
    head_dim=16,
    prefix_layers=1,
    expert_layers=1,
    image_tokens=8,
    text_tokens=8,
    vocabulary=64,
    patch_dim=48,
    vision_width=32,
    vision_mlp_width=64,
    action_tokens=8,
    action_dim=8,
    needs_cuda=False,
)

PI05 = ExampleSize(
    name="pi05",
    width=1024,
    mlp_width=4096,
    query_heads=8,
    kv_heads=1,
    head_dim=256,
    prefix_layers=18,
    expert_layers=18,
    image_tokens=512,
    text_tokens=64,
    vocabulary=4096,
    patch_dim=588,
    vision_width=1152,
    vision_mlp_width=4304,
    action_tokens=50,
    action_dim=32,
    needs_cuda=True,
)

SIZES: dict[str, ExampleSize] = {size.name: size for size in (TINY, PI05)}
