//! The README's op table is the current output of `kernels::op_table()`.

#[test]
fn readme_shows_the_current_op_table() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let block = readme.split("<!-- op-table -->").nth(1).and_then(|s| s.split("<!-- /op-table -->").next()).unwrap();
    let table = tensorflow_wgpu::kernels::op_table();
    let expected = format!("\n```text\n{table}\n({} kernels)\n```\n", tensorflow_wgpu::kernels::KERNELS.len());
    assert_eq!(block, expected, "regenerate the README table: bash scripts/update-readme-op-table.sh");
}
