//! Turning what was observed during a run into a [`Benchmark`].

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::battle::{Benchmark, RateSource};

/// Token counts reported by the server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    /// Prompt tokens served from the server's cache (OpenAI's
    /// `prompt_tokens_details.cached_tokens`).
    #[serde(default)]
    pub cached_tokens: Option<u64>,
    /// What the call cost, when the server says (OpenRouter's `usage.cost`,
    /// USD).
    #[serde(default)]
    pub cost: Option<f64>,
}

/// llama.cpp's own timing report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Timings {
    pub prompt_n: Option<u64>,
    pub prompt_ms: Option<f64>,
    pub predicted_n: Option<u64>,
    pub predicted_ms: Option<f64>,
    pub predicted_per_second: Option<f64>,
    /// Prompt processing speed, kept apart from generation.
    pub prompt_per_second: Option<f64>,
    pub cache_n: Option<u64>,
}

/// What the runner observed during one contestant's run.
#[derive(Debug, Clone)]
pub struct Measurement {
    /// When the contestant started (first attempt).
    pub run_started: Instant,
    /// When the successful attempt's request was sent.
    pub attempt_started: Instant,
    pub first_token: Option<Instant>,
    pub last_token: Option<Instant>,
    pub finished: Instant,
    /// Content and reasoning deltas received.
    pub deltas: u64,
    pub usage: Option<Usage>,
    pub timings: Option<Timings>,
}

fn millis(d: std::time::Duration) -> u64 {
    d.as_millis().min(u128::from(u64::MAX)) as u64
}

/// What one call cost: the server's own figure when it sends one, else its
/// tokens at `price`; `None` when neither is known.
pub fn call_cost(
    usage: Option<&Usage>,
    b: &Benchmark,
    price: Option<&crate::config::Price>,
) -> Option<f64> {
    if let Some(cost) = usage
        .and_then(|u| u.cost)
        .filter(|c| c.is_finite() && *c >= 0.0)
    {
        return Some(cost);
    }
    let price = price?;
    if price.is_free() {
        return Some(0.0);
    }
    if b.prompt_tokens.is_none() && b.completion_tokens.is_none() {
        return None;
    }
    Some(price.cost(
        b.prompt_tokens.unwrap_or(0),
        b.cached_tokens.unwrap_or(0),
        b.completion_tokens.unwrap_or(0),
    ))
}

/// What one judge call cost: the server's own figure, else its tokens at
/// `price`; `None` when neither is known.
pub fn usage_cost(usage: Option<&Usage>, price: Option<&crate::config::Price>) -> Option<f64> {
    if let Some(cost) = usage
        .and_then(|u| u.cost)
        .filter(|c| c.is_finite() && *c >= 0.0)
    {
        return Some(cost);
    }
    let price = price?;
    if price.is_free() {
        return Some(0.0);
    }
    let usage = usage?;
    Some(price.cost(
        usage.prompt_tokens?,
        usage.cached_tokens.unwrap_or(0),
        usage.completion_tokens.unwrap_or(0),
    ))
}

/// An amount in US dollars as people read it: "$0" for nothing, "< $0.0001"
/// below a hundredth of a cent, three significant digits below a dollar
/// ("$0.00123", "$0.0457"), cents from a dollar up ("$12.30"). (Four fixed
/// decimals printed "$0.0000" for a cost of a few millionths.)
pub fn usd(amount: f64) -> String {
    if amount == 0.0 {
        "$0".into()
    } else if amount < 0.0001 {
        "< $0.0001".into()
    } else if amount < 1.0 {
        let digits = (2 - amount.log10().floor() as i32).max(0) as usize;
        format!("${amount:.digits$}")
    } else {
        format!("${amount:.2}")
    }
}

/// [`usd`], or "—" for an unknown amount.
pub fn usd_or_dash(amount: Option<f64>) -> String {
    amount.map_or("—".into(), usd)
}

/// Adds costs: unknown when any part is.
pub fn add_costs(costs: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    costs.into_iter().try_fold(0.0, |sum, c| c.map(|c| sum + c))
}

/// Token counts come from the server's usage (else llama.cpp timings, else
/// the number of deltas). Tokens per second is llama.cpp's own
/// `predicted_per_second` when sent, else measured over the generation span
/// (first to last token), excluding the time to first token.
pub fn compute(m: &Measurement) -> Benchmark {
    let usage = m.usage.unwrap_or_default();
    let timings = m.timings.unwrap_or_default();
    let completion = usage
        .completion_tokens
        .or(timings.predicted_n)
        .or((m.deltas > 0).then_some(m.deltas));
    let prompt = usage.prompt_tokens.or(timings.prompt_n);
    let measured = match (m.first_token, m.last_token, completion) {
        (Some(first), Some(last), Some(n)) if m.deltas >= 2 && last > first => {
            // n tokens arrive over deltas-1 gaps.
            let span = (last - first).as_secs_f64();
            let per_delta = n as f64 / m.deltas as f64;
            Some(per_delta * (m.deltas - 1) as f64 / span)
        }
        _ => None,
    };
    let (tokens_per_sec, rate_source) = match timings.predicted_per_second {
        Some(r) if r.is_finite() && r > 0.0 => (Some(r), Some(RateSource::Server)),
        _ => (measured, measured.map(|_| RateSource::Measured)),
    };
    Benchmark {
        duration_ms: Some(millis(m.finished - m.run_started)),
        ttft_ms: m.first_token.map(|t| millis(t - m.attempt_started)),
        prompt_tokens: prompt,
        completion_tokens: completion,
        tokens_per_sec,
        rate_source,
        cached_tokens: usage.cached_tokens.or(timings.cache_n),
        prompt_per_sec: timings
            .prompt_per_second
            .filter(|r| r.is_finite() && *r > 0.0),
        model_switched: false,
        cost_usd: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn base() -> Measurement {
        let t0 = Instant::now();
        Measurement {
            run_started: t0,
            attempt_started: t0 + Duration::from_millis(100),
            first_token: Some(t0 + Duration::from_millis(300)),
            last_token: Some(t0 + Duration::from_millis(1300)),
            finished: t0 + Duration::from_millis(1400),
            deltas: 101,
            usage: None,
            timings: None,
        }
    }

    #[test]
    fn measured_rate_spans_first_to_last_token() {
        let b = compute(&base());
        assert_eq!(b.duration_ms, Some(1400));
        assert_eq!(b.ttft_ms, Some(200));
        assert_eq!(b.completion_tokens, Some(101));
        assert!((b.tokens_per_sec.unwrap() - 100.0).abs() < 1e-9);
        assert_eq!(b.rate_source, Some(RateSource::Measured));
    }

    #[test]
    fn server_timings_win() {
        let mut m = base();
        m.usage = Some(Usage {
            prompt_tokens: Some(12),
            completion_tokens: Some(99),
            ..Default::default()
        });
        m.timings = Some(Timings {
            predicted_per_second: Some(153.2),
            cache_n: Some(0),
            ..Default::default()
        });
        let b = compute(&m);
        assert_eq!(b.tokens_per_sec, Some(153.2));
        assert_eq!(b.rate_source, Some(RateSource::Server));
        assert_eq!(b.prompt_tokens, Some(12));
        assert_eq!(b.completion_tokens, Some(99));
        assert_eq!(b.cached_tokens, Some(0));
    }

    #[test]
    fn no_tokens_no_rate() {
        let mut m = base();
        m.first_token = None;
        m.last_token = None;
        m.deltas = 0;
        let b = compute(&m);
        assert_eq!(b.tokens_per_sec, None);
        assert_eq!(b.ttft_ms, None);
        assert_eq!(b.completion_tokens, None);
    }
}
