//! `[[model_cutoff]]` in arena.toml: read, checked, and put before the
//! cutoffs Arena ships (issue 41, point 6).

use arena_domain::config::Config;
use arena_domain::pack_cutoff::cutoff_for;
use chrono::NaiveDate;

#[test]
fn arena_toml_takes_model_cutoffs_and_refuses_a_date_that_is_not_a_day() {
    let config =
        Config::parse("[[model_cutoff]]\nmodel = \"gpt-4o*\"\ndate = \"2024-05-31\"\n").unwrap();
    // The user's entry comes before the shipped one for the same model.
    assert_eq!(
        cutoff_for("gpt-4o", &config.model_cutoffs()),
        NaiveDate::from_ymd_opt(2024, 5, 31)
    );
    // With none of the user's, the shipped one.
    assert_eq!(
        cutoff_for("gpt-4o", &Config::default().model_cutoffs()),
        NaiveDate::from_ymd_opt(2023, 10, 1)
    );
    let err =
        Config::parse("[[model_cutoff]]\nmodel = \"m\"\ndate = \"last spring\"\n").unwrap_err();
    assert!(err.contains("is not a day"), "{err}");
}
