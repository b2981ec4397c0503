fn main() {
    std::process::exit(mcmpart::cli::main());
}
