# cpu_name [CPUINFO]: the CPU a measurement ran on, for the benchmarks'
# first lines: its model name, family and model, and for an AMD the core
# those two name. A cloud VM often reports only "AMD EPYC", and three
# sessions took a Zen 4 host for the Zen 5 they had been on before: its
# 512-bit multiplies run at half the Zen 5's rate, which they read as a
# slow host. CPUINFO defaults to /proc/cpuinfo.
cpu_name() {
    awk -F': *' '
        /^model name/ && name == "" { name = $2 }
        /^vendor_id/ && vendor == "" { vendor = $2 }
        /^cpu family/ && family == "" { family = $2 }
        /^model[ \t]*:/ && model == "" { model = $2 }
        END {
            if (name == "") name = "unknown CPU"
            core = ""
            # AMD family and model ranges (the core, where both are known)
            if (vendor == "AuthenticAMD" && family == 23)
                core = model < 48 ? "Zen/Zen+" : "Zen 2"
            else if (vendor == "AuthenticAMD" && family == 25)
                core = (model < 16 || (model >= 32 && model < 96)) ? "Zen 3" : "Zen 4"
            else if (vendor == "AuthenticAMD" && family == 26 && model < 80)
                core = "Zen 5"
            if (family == "") printf "%s\n", name
            else printf "%s (family %s model %s%s)\n", name, family, model, core == "" ? "" : ", " core
        }' "${1:-/proc/cpuinfo}"
}
