fn main() -> std::process::ExitCode {
    gigscope::cli::main()
}
