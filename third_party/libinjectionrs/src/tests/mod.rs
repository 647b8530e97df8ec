pub mod test_folding;
pub mod differential_tests;
pub mod test_html5_files;
pub mod test_tokens_files;