#include "tools/tensor_role.h"

#include <gtest/gtest.h>

namespace pagoda::tools {
namespace {

TEST(TensorRole, BlockMatricesTakeTheirRoleAndLayerFromTheName) {
  const TensorPlan q = tensor_plan_of("blk.12.attn_q.weight", {64, 64});
  EXPECT_EQ(q.role, TensorRole::kAttnQ);
  EXPECT_EQ(q.layer, 12);
  EXPECT_EQ(q.name, "blk.12.attn_q.weight");
  EXPECT_EQ(q.shape, (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(tensor_plan_of("blk.0.attn_k.weight", {64, 32}).role, TensorRole::kAttnK);
  EXPECT_EQ(tensor_plan_of("blk.0.attn_v.weight", {64, 32}).role, TensorRole::kAttnV);
  EXPECT_EQ(tensor_plan_of("blk.0.attn_qkv.weight", {64, 192}).role, TensorRole::kAttnQkv);
  EXPECT_EQ(tensor_plan_of("blk.0.attn_output.weight", {64, 64}).role, TensorRole::kAttnOutput);
  EXPECT_EQ(tensor_plan_of("blk.0.ffn_gate.weight", {64, 172}).role, TensorRole::kFfnGate);
  EXPECT_EQ(tensor_plan_of("blk.0.ffn_up.weight", {64, 172}).role, TensorRole::kFfnUp);
  EXPECT_EQ(tensor_plan_of("blk.3.ffn_down.weight", {172, 64}).role, TensorRole::kFfnDown);
  EXPECT_EQ(tensor_plan_of("blk.3.ffn_down_exps.weight", {172, 64, 8}).role, TensorRole::kFfnDown);
}

TEST(TensorRole, ModelLevelTensorsHaveNoLayer) {
  const TensorPlan embedding = tensor_plan_of("token_embd.weight", {64, 512});
  EXPECT_EQ(embedding.role, TensorRole::kTokenEmbedding);
  EXPECT_EQ(embedding.layer, -1);
  EXPECT_EQ(tensor_plan_of("output.weight", {64, 512}).role, TensorRole::kOutput);
  EXPECT_EQ(tensor_plan_of("position_embd.weight", {64, 1024}).role,
            TensorRole::kPositionEmbedding);
  EXPECT_EQ(tensor_plan_of("output_norm.weight", {64}).role, TensorRole::kNorm);
}

TEST(TensorRole, VectorsAreNormsOrBiasesAndUnknownMatricesAreOther) {
  EXPECT_EQ(tensor_plan_of("blk.1.attn_norm.weight", {64}).role, TensorRole::kNorm);
  EXPECT_EQ(tensor_plan_of("blk.1.attn_q.bias", {64}).role, TensorRole::kBias);
  EXPECT_EQ(tensor_plan_of("blk.1.attn_q.weight", {64}).role, TensorRole::kNorm);  // 1-D
  const TensorPlan other = tensor_plan_of("blk.2.ssm_in.weight", {64, 128});
  EXPECT_EQ(other.role, TensorRole::kOtherMatrix);
  EXPECT_EQ(other.layer, 2);
  EXPECT_EQ(tensor_plan_of("blk.x.attn_q.weight", {64, 64}).layer, -1);  // not a block prefix
}

TEST(TensorRole, LayerCountIsOneMoreThanTheHighestLayer) {
  EXPECT_EQ(layer_count({}), 0);
  EXPECT_EQ(layer_count({tensor_plan_of("token_embd.weight", {4, 4})}), 0);
  EXPECT_EQ(layer_count({tensor_plan_of("blk.4.attn_q.weight", {4, 4}),
                         tensor_plan_of("blk.1.attn_q.weight", {4, 4})}),
            5);
}

}  // namespace
}  // namespace pagoda::tools
