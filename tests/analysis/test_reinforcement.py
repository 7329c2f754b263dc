import numpy as np
import pytest

from tanalyze.analysis.divergence import analyze_divergence
from tanalyze.analysis.reinforcement import RewardThresholds, classify_reinforcement, reward_features
from tanalyze.curves import Curve

STEPS = np.arange(1, 201)


def noisy(levels: np.ndarray, sigma: float, seed: int = 0) -> np.ndarray:
    return levels + sigma * np.random.default_rng(seed).standard_normal(len(levels))


def reward(values, tag: str = "rollout/ep_rew_mean") -> Curve:
    return Curve.from_arrays(STEPS[: len(values)], values, tag)


@pytest.mark.parametrize("seed", range(5))
def test_a_reward_that_rises_through_its_noise_is_normal(seed):
    verdict = classify_reinforcement(reward(noisy(np.linspace(20, 180, 200), 25.0, seed)))
    assert verdict.label == "normal" and verdict.confidence > 0.8
    assert verdict.evidence["main_role"] == "reward" and verdict.evidence["reinforcement"] is True
    assert verdict.reasons[0].startswith("rollout/ep_rew_mean rose from")


def test_a_negative_reward_that_rises_is_normal():
    # a pendulum's reward: -1200 towards -200, below zero throughout
    verdict = classify_reinforcement(reward(noisy(np.linspace(-1200, -200, 200), 80.0)))
    assert verdict.label == "normal"


@pytest.mark.parametrize("seed", range(5))
def test_a_reward_that_only_wanders_in_its_noise_is_not_learning(seed):
    verdict = classify_reinforcement(reward(noisy(np.full(200, 10.0), 3.0, seed)))
    assert verdict.label == "underfitting", verdict.reasons
    [finding] = verdict.findings
    assert finding.code == "reward_flat" and "the policy is not learning" in finding.message


def test_a_reward_that_is_always_zero_is_not_learning():
    verdict = classify_reinforcement(reward(np.zeros(200)))
    assert verdict.label == "underfitting" and verdict.evidence["gain"] == 0.0


def test_a_reward_that_rose_and_gave_its_gain_back_collapsed():
    levels = np.concatenate([np.linspace(0, 100, 100), np.linspace(100, 5, 20), np.full(80, 5.0)])
    verdict = classify_reinforcement(reward(noisy(levels, 5.0)))
    assert verdict.label == "unstable"
    [finding] = verdict.findings
    assert finding.code == "reward_collapse" and finding.severity == "warning"
    assert 80 <= finding.step <= 110 and "the policy collapsed" in finding.message


def test_a_reward_that_keeps_most_of_its_gain_is_normal_with_a_note():
    levels = np.concatenate([np.linspace(0, 100, 120), np.full(80, 75.0)])
    verdict = classify_reinforcement(reward(noisy(levels, 3.0)))
    assert verdict.label == "normal" and "ended below its best" in verdict.reasons[1]


def test_a_falling_reward_is_unstable():
    verdict = classify_reinforcement(reward(noisy(np.linspace(50, 10, 200), 4.0)))
    assert verdict.label == "unstable" and "fell" in verdict.reasons[0]


def test_a_policy_entropy_that_blows_up_is_a_collapse_whatever_the_reward():
    entropy = Curve.from_arrays(STEPS[:20], np.concatenate([[0.46, 1.3, 2.6, 2.7, 6.0, 7.5], np.full(14, 11.6)]),
                                "actor/entropy")
    verdict = classify_reinforcement(reward(np.zeros(20), "critic/rewards/mean"), entropy=entropy)
    assert verdict.label == "diverged"
    [finding] = verdict.findings
    assert finding.code == "policy_collapse" and finding.severity == "error" and finding.step == 5
    assert verdict.evidence["entropy_ratio"] == pytest.approx(11.6 / np.median([0.46, 1.3]))
    # an entropy that falls slowly as the policy sharpens is no collapse
    falling = Curve.from_arrays(STEPS, np.linspace(2.0, 0.8, 200), "actor/entropy")
    assert classify_reinforcement(reward(noisy(np.linspace(0, 1, 200), 0.1)), entropy=falling).label == "normal"


def test_nan_in_the_loss_or_the_reward_is_a_divergence():
    loss = Curve.from_arrays(STEPS, np.concatenate([np.full(150, 0.1), np.full(50, np.nan)]), "actor/pg_loss")
    rising = reward(noisy(np.linspace(0, 10, 200), 1.0))
    verdict = classify_reinforcement(rising, loss=loss, loss_divergence=analyze_divergence(loss))
    assert verdict.label == "diverged" and verdict.evidence["divergence_kind"] == "nan"
    broken = np.concatenate([np.linspace(0, 10, 150), np.full(50, np.nan)])
    verdict = classify_reinforcement(reward(broken))
    assert verdict.label == "diverged" and verdict.evidence["divergence_step"] == 151


def test_too_few_points():
    verdict = classify_reinforcement(reward(np.arange(5.0)))
    assert verdict.label == "insufficient_data" and "only 5 finite point(s)" in verdict.reasons[0]


def test_the_bar_is_noise_or_a_share_of_the_scale():
    quiet = reward_features(reward(np.linspace(100, 101, 200)))
    assert quiet["bar"] == pytest.approx(RewardThresholds().min_gain * 101, rel=0.01)
    loud = reward_features(reward(noisy(np.full(200, 100.0), 20.0)))
    assert loud["bar"] > 20.0 and loud["head_points"] == 20


def test_an_entropy_that_falls_to_zero_before_the_reward_rises_is_premature_convergence():
    # a learning rate far too high: after a few updates the policy always takes one action
    entropy = Curve.from_arrays(STEPS, np.concatenate([[0.69, 0.25, 0.078, 0.031, 0.014], np.full(195, 2e-5)]),
                                "policy/entropy")
    stuck = reward(noisy(np.full(200, 9.5), 0.6), "episode/reward")
    verdict = classify_reinforcement(stuck, entropy=entropy)
    assert verdict.label == "unstable"
    [finding] = verdict.findings
    assert finding.code == "entropy_collapse" and finding.step == 4  # first at or below 5% of 0.69
    assert "settled on fixed choices before it learned anything" in finding.message
    # a rise beyond the noise that is small for the reward's scale does not outweigh the collapse
    inching = classify_reinforcement(reward(noisy(np.linspace(9, 10, 200), 0.1), "episode/reward"), entropy=entropy)
    assert inching.label == "unstable" and inching.reasons[0].startswith("episode/reward rose only from 9")
    # the same fall of the entropy while the reward climbs is a policy that learned and sharpened
    learned = reward(noisy(np.linspace(20, 500, 200), 30.0), "episode/reward")
    assert classify_reinforcement(learned, entropy=entropy).label == "normal"


def test_a_win_rate_that_climbs_is_learning_though_each_episode_is_won_or_lost():
    # 0/1 outcomes whose rate climbs from 10% to 50% over 2,000 episodes: the median of either end is 0
    steps = np.arange(2000)
    for seed in range(5):
        wins = (np.random.default_rng(seed).random(2000) < 0.1 + 0.4 * steps / 2000).astype(float)
        verdict = classify_reinforcement(Curve.from_arrays(steps, wins, "episode_reward"))
        assert verdict.label == "normal", verdict.reasons
        assert 0.05 < verdict.evidence["start_level"] < 0.2 and 0.38 < verdict.evidence["end_level"] < 0.62


def test_correlated_noise_around_a_flat_reward_is_not_read_as_a_change():
    # AR(1) noise (each episode's reward carries half the last one's luck) around a flat level
    def ar1(seed: int) -> np.ndarray:
        shocks = np.random.default_rng(seed).standard_normal(1000)
        out = np.zeros(1000)
        for i in range(1, 1000):
            out[i] = 0.5 * out[i - 1] + shocks[i]
        return 10 + out

    labels = [classify_reinforcement(Curve.from_arrays(np.arange(1000), ar1(seed), "r")).label for seed in range(40)]
    assert labels.count("underfitting") == 40  # with the independent-noise standard error alone: 7 of 40 not


@pytest.mark.parametrize("seed", range(10))
def test_a_rise_held_to_the_end_is_learning_though_a_few_wild_episodes_widen_the_noise(seed):
    # evaluations near 0, a climb to 1,700 held over the last 30, and five mid-run episodes far below zero (a
    # failed evaluation's penalty): the standard deviation of the differences grows so much that the means'
    # rise of ~1,700 would not clear their bar; the medians, and a noise the outliers do not move, tell it
    rng = np.random.default_rng(seed)
    levels = np.concatenate([np.zeros(5), np.linspace(0, 1700, 15), np.full(30, 1700.0)])
    values = levels + 250 * rng.standard_normal(50) * np.r_[np.full(5, 0.3), np.ones(45)]
    values[[7, 10, 13, 15, 17]] = [-1600, -3300, -2000, -1800, -2500]
    verdict = classify_reinforcement(Curve.from_arrays(np.arange(50) * 1000, values, "episode/reward"))
    assert verdict.label == "normal", verdict.reasons
    assert verdict.evidence["decided_by"] == "medians" and "median of its first 5 points" in verdict.reasons[0]
    assert verdict.evidence["gain"] < verdict.evidence["bar"]  # the means alone did not clear their bar


def test_outliers_around_a_flat_reward_are_no_rise_by_the_medians_either():
    labels = []
    for seed in range(40):
        rng = np.random.default_rng(seed)
        values = 100 + 30 * rng.standard_t(2, 60)  # heavy tails around a flat level
        values[rng.choice(60, 5, replace=False)] = -2000
        labels.append(classify_reinforcement(Curve.from_arrays(np.arange(60), values, "r")).label)
    assert labels.count("underfitting") >= 39


def test_the_medians_of_won_or_lost_episodes_decide_nothing():
    # a flat 50% win rate: the median of a window of 0/1 outcomes is 0 or 1 by luck; only the means judge it
    labels = []
    for seed in range(40):
        wins = (np.random.default_rng(seed).random(200) < 0.5).astype(float)
        verdict = classify_reinforcement(Curve.from_arrays(np.arange(200), wins, "episode_reward"))
        labels.append(verdict.label)
        assert verdict.evidence["median_bar"] is None
    assert labels.count("underfitting") == 40


def test_a_flat_reward_of_a_few_dozen_noisy_episodes_is_too_few_to_call_not_learning():
    """30 episodes of a fighting game's reward (4,500 to 179,600, their mean a little higher in the second half):
    levels of 3 episodes each need a rise of 150,000 to count, most of what the reward ever spans. It had been
    UNDERFITTING 0.68, "the policy is not learning"; 60 such episodes still are."""
    rng = np.random.default_rng(8)
    few = 60_000 + 50_000 * rng.standard_normal(30)
    verdict = classify_reinforcement(Curve.from_arrays(np.arange(30) * 15_800, np.abs(few), "r"))
    assert verdict.label == "insufficient_data"
    assert "give levels of 3 each" in verdict.reasons[0] and "too few to tell whether the policy learns" in \
        verdict.reasons[0]
    more = np.abs(60_000 + 50_000 * rng.standard_normal(60))
    assert classify_reinforcement(Curve.from_arrays(np.arange(60) * 15_800, more, "r")).label == "underfitting"
