//! The mcp-bound binary: everything is in the library's `main`.

fn main() {
    std::process::exit(mcp_bound::main(std::env::args_os()));
}
