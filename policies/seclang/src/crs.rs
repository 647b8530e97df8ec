//! The OWASP Core Rule Set 4 as Wharf carries it (`third_party/coreruleset`),
//! embedded at build time: loaded the way CRS's installation instructions
//! say (`crs-setup.conf`, then `rules/*.conf` in name order) with a paranoia
//! level and an inbound anomaly threshold set before the rules, as
//! `crs-setup.conf`'s commented `SecAction`s 900000 and 900110 would.

use crate::{LoadError, MemFiles, RuleSet};

include!(concat!(env!("OUT_DIR"), "/crs_files.rs"));

/// The version carried (see `third_party/coreruleset/README.md`).
pub const VERSION: &str = "4.29.0-dev (2cbd1d0)";

/// What a deployment chooses when it enables CRS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// `tx.blocking_paranoia_level`, 1–4.
    pub paranoia: u8,
    /// `tx.detection_paranoia_level`: rules up to this level run and are
    /// logged, those past `paranoia` without scoring (≥ `paranoia`).
    pub detection_paranoia: u8,
    /// `tx.inbound_anomaly_score_threshold` (CRS's default: 5).
    pub inbound_threshold: u32,
    /// `tx.outbound_anomaly_score_threshold` (CRS's default: 4).
    pub outbound_threshold: u32,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            paranoia: 1,
            detection_paranoia: 1,
            inbound_threshold: 5,
            outbound_threshold: 4,
        }
    }
}

impl Settings {
    /// The `SecAction` that sets these before CRS's own initialization.
    pub fn directives(&self) -> String {
        format!(
            "SecAction \"id:900000,phase:1,pass,t:none,nolog,setvar:tx.blocking_paranoia_level={},setvar:tx.detection_paranoia_level={}\"\n\
             SecAction \"id:900110,phase:1,pass,t:none,nolog,setvar:tx.inbound_anomaly_score_threshold={},setvar:tx.outbound_anomaly_score_threshold={}\"\n",
            self.paranoia.clamp(1, 4),
            self.detection_paranoia.clamp(self.paranoia.clamp(1, 4), 4),
            self.inbound_threshold,
            self.outbound_threshold,
        )
    }
}

/// Every embedded file, by its path (`crs-setup.conf.example`,
/// `rules/REQUEST-901-INITIALIZATION.conf`, `rules/unix-shell.data`…).
pub fn files() -> MemFiles {
    let mut files = MemFiles::new();
    for (name, text) in FILES {
        files.add(name, *text);
    }
    files
}

/// The paths to load, in order, after `prelude` files of the caller's
/// (engine settings, exclusions before CRS).
pub const LOAD_ORDER: &[&str] = &["crs-setup.conf.example", "rules/*.conf"];

/// CRS with `settings`, after `before` (engine settings such as
/// `SecRuleEngine`, loaded first) and followed by `after` (exclusions).
pub fn rule_set(before: &str, settings: &Settings, after: &str) -> Result<RuleSet, LoadError> {
    let mut files = files();
    files.add("(before)", before);
    files.add("(settings)", settings.directives());
    files.add("(after)", after);
    let mut order = vec!["(before)", "(settings)"];
    order.extend_from_slice(LOAD_ORDER);
    order.push("(after)");
    RuleSet::from_files("", &order, &files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_vendored_file_is_embedded() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../third_party/coreruleset/rules");
        let on_disk = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".conf") || n.ends_with(".data"))
            .count();
        assert_eq!(FILES.len(), on_disk + 1);
        assert!(
            files()
                .get("rules/REQUEST-942-APPLICATION-ATTACK-SQLI.conf")
                .is_some()
        );
    }

    #[test]
    fn settings_clamp_to_crs_ranges() {
        let s = Settings {
            paranoia: 9,
            detection_paranoia: 0,
            ..Settings::default()
        };
        let d = s.directives();
        assert!(d.contains("blocking_paranoia_level=4,"), "{d}");
        assert!(d.contains("detection_paranoia_level=4\""), "{d}");
    }
}
