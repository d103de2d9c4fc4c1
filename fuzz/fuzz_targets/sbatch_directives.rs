//! A batch script as gsbatch reads it: the `#SBATCH` scan, the option parser over what it
//! found, and the script checks. None may panic, whatever the bytes.
#![no_main]

use gsched_cli::sbatch;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = sbatch::check_script(data);
    let script = String::from_utf8_lossy(data);
    if let Ok(d) = sbatch::directive_args(&script, "fuzz.sh", "gsbatch") {
        let _ = sbatch::parse_directives("gsbatch", &d.args);
    }
});
