/* Names of general.file_type values (llama.cpp's enum llama_ftype). The
 * value says what most 2-D weights were quantized to; 1-D tensors (norms)
 * usually stay F32 whatever the file type. */
#include "model/model.h"

const char *model_file_type_name(uint32_t file_type)
{
    /* LLAMA_FTYPE_GUESSED is ORed in by llama.cpp when the key is absent;
     * files never store it, but tolerate it rather than print "unknown". */
    switch (file_type & ~1024u) {
    case 0: return "ALL_F32";
    case 1: return "MOSTLY_F16";
    case 2: return "MOSTLY_Q4_0";
    case 3: return "MOSTLY_Q4_1";
    case 4: return "MOSTLY_Q4_1_SOME_F16"; /* removed upstream, old files */
    case 7: return "MOSTLY_Q8_0";
    case 8: return "MOSTLY_Q5_0";
    case 9: return "MOSTLY_Q5_1";
    case 10: return "MOSTLY_Q2_K";
    case 11: return "MOSTLY_Q3_K_S";
    case 12: return "MOSTLY_Q3_K_M";
    case 13: return "MOSTLY_Q3_K_L";
    case 14: return "MOSTLY_Q4_K_S";
    case 15: return "MOSTLY_Q4_K_M";
    case 16: return "MOSTLY_Q5_K_S";
    case 17: return "MOSTLY_Q5_K_M";
    case 18: return "MOSTLY_Q6_K";
    case 19: return "MOSTLY_IQ2_XXS";
    case 20: return "MOSTLY_IQ2_XS";
    case 21: return "MOSTLY_Q2_K_S";
    case 22: return "MOSTLY_IQ3_XS";
    case 23: return "MOSTLY_IQ3_XXS";
    case 24: return "MOSTLY_IQ1_S";
    case 25: return "MOSTLY_IQ4_NL";
    case 26: return "MOSTLY_IQ3_S";
    case 27: return "MOSTLY_IQ3_M";
    case 28: return "MOSTLY_IQ2_S";
    case 29: return "MOSTLY_IQ2_M";
    case 30: return "MOSTLY_IQ4_XS";
    case 31: return "MOSTLY_IQ1_M";
    case 32: return "MOSTLY_BF16";
    case 33: return "MOSTLY_Q4_0_4_4"; /* removed upstream (runtime repack now) */
    case 34: return "MOSTLY_Q4_0_4_8";
    case 35: return "MOSTLY_Q4_0_8_8";
    case 36: return "MOSTLY_TQ1_0";
    case 37: return "MOSTLY_TQ2_0";
    case 38: return "MOSTLY_MXFP4_MOE";
    default: return "unknown";
    }
}
