#!/usr/bin/env python3
"""scripts/lab/sass_loops.py on the CPU: on a listing in nvdisasm's format it finds a kernel's innermost
loops that hold HGMMA and MUFU.EX2 (not the outer tile loop, not loops without both), counts their
instructions, and compares two kernels' loops by opcode with registers and predicates ignored."""
import contextlib
import importlib.util
import io
import os
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("sass_loops", os.path.join(HERE, "..", "..", "scripts", "lab", "sass_loops.py"))
sass = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sass)


def kernel(name, body):
    """A function section as `nvdisasm -c -sf` writes it; body: label lines and instructions."""
    lines = [f'\t.section\t.text.{name},"ax",@progbits', f"{name}:"]
    addr = 0
    for item in body:
        if item.endswith(":"):
            lines.append(item)
        else:
            lines.append(f"        /*{addr:04x}*/                   {item} ;")
            addr += 16
    return lines


# An outer tile loop (.L_x_1) around a main loop (.L_x_2) with HGMMA and MUFU.EX2, and a copy loop
# (.L_x_3) with neither.
MAIN = ["HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8], RZ, !UPT", "FMNMX R4, R24, R25, !PT", "MUFU.EX2 R24, R24",
        "FADD R5, R24, R25", "@P0 F2FP.BF16.F32.PACK_AB R6, R25, R24"]
FIRST = ["MOV R1, c[0x0][0x28]", ".L_x_1:", "IMAD R2, R3, R4, RZ", ".L_x_2:", *MAIN, "@!P1 BRA `(.L_x_2)",
         "STS [R2], R24", "@P2 BRA `(.L_x_1)", ".L_x_3:", "LDG.E R7, desc[UR4][R8.64]", "@P3 BRA `(.L_x_3)", "EXIT"]
# The same loop with other registers and the exponential moved before the maximum.
SECOND = ["MOV R1, c[0x0][0x28]", ".L_x_9:", "HGMMA.64x128x16.F32.BF16 R40, gdesc[UR8], RZ, !UPT",
          "MUFU.EX2 R40, R40", "FMNMX R8, R40, R41, !PT", "FADD R9, R40, R41", "F2FP.BF16.F32.PACK_AB R10, R41, R40",
          "@!P4 BRA `(.L_x_9)", "EXIT"]


class SassLoopsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "k.sass")
        with open(self.path, "w") as f:
            f.write("\n".join(kernel("_Z6kernelILb0EEvv", FIRST) + kernel("_Z6kernelILb1EEvv", SECOND)) + "\n")
        self.functions = sass.read_functions(self.path)

    def tearDown(self):
        self.dir.cleanup()

    def test_finds_only_the_innermost_attention_loop(self):
        name, loops = sass.main_loops(self.functions, "ILb0E")
        self.assertEqual(name, "_Z6kernelILb0EEvv")
        self.assertEqual(len(loops), 1)
        body = loops[0][2]
        self.assertEqual([sass.opcode(t) for t in body], ["HGMMA.64x128x16.F32.BF16", "FMNMX", "MUFU.EX2", "FADD",
                                                          "F2FP.BF16.F32.PACK_AB", "BRA"])

    def test_compares_opcodes_not_registers(self):
        _, a = sass.main_loops(self.functions, "ILb0E")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            sass.compare(a[0][2], a[0][2], show=False)
        self.assertIn("same ops in order: 1.000; ops moved or changed: 0", out.getvalue())
        _, b = sass.main_loops(self.functions, "ILb1E")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            sass.compare(a[0][2], b[0][2], show=True)
        text = out.getvalue()
        # Six ops each, one moved: 2 * 5 / 12 in order, and the move shown.
        self.assertIn("same ops in order: 0.833; ops moved or changed: 2", text)
        self.assertIn("MUFU.EX2", text)

    def test_same_sees_register_changes_but_not_label_numbers(self):
        relabeled = [t.replace(".L_x_1", ".L_x_71").replace(".L_x_2", ".L_x_72").replace(".L_x_3", ".L_x_73")
                     for t in FIRST]
        other_register = [t.replace("R24, R25", "R26, R25") for t in FIRST]
        path = os.path.join(self.dir.name, "after.sass")
        with open(path, "w") as f:
            f.write("\n".join(kernel("_Z6kernelILb0EEvv", relabeled) + kernel("_Z6kernelILb1EEvv", other_register) +
                              kernel("_Z3newv", ["EXIT"])) + "\n")
        # The second listing's ILb0E is FIRST relabeled (unchanged); its ILb1E is FIRST, not SECOND.
        differ, alone = sass.changed_kernels(self.functions, sass.read_functions(path))
        self.assertEqual(differ, ["_Z6kernelILb1EEvv"])
        self.assertEqual(alone, ["_Z3newv"])
        with open(path, "w") as f:
            f.write("\n".join(kernel("_Z6kernelILb0EEvv", relabeled) + kernel("_Z6kernelILb1EEvv", SECOND)) + "\n")
        self.assertEqual(sass.changed_kernels(self.functions, sass.read_functions(path)), ([], []))
        with open(path, "w") as f:
            f.write("\n".join(kernel("_Z6kernelILb0EEvv", other_register) + kernel("_Z6kernelILb1EEvv", SECOND)) + "\n")
        self.assertEqual(sass.changed_kernels(self.functions, sass.read_functions(path))[0], ["_Z6kernelILb0EEvv"])

    def test_same_ignores_the_numbering_of_internal_helpers_only(self):
        def calling(helper):
            return ["MOV R1, c[0x0][0x28]", f"CALL.REL.NOINC `($__internal_{helper}_$__cuda_sm20_rcp_rn_f32_slowpath)",
                    "EXIT"]
        before, after = (os.path.join(self.dir.name, n) for n in ("before.sass", "after.sass"))
        with open(before, "w") as f:
            f.write("\n".join(kernel("_Z1av", calling(31)) + kernel("_Z1bv", calling(31))) + "\n")
        with open(after, "w") as f:  # the same helper renumbered in a; another one called in b
            f.write("\n".join(kernel("_Z1av", calling(37)) + kernel("_Z1bv", [t.replace("rcp_rn", "sqrt_rn")
                                                                              for t in calling(31)])) + "\n")
        self.assertEqual(sass.changed_kernels(sass.read_functions(before), sass.read_functions(after)), (["_Z1bv"], []))

    def test_unreadable_or_foreign_file_is_a_one_line_error(self):
        with self.assertRaises(SystemExit) as e:
            sass.read_functions(os.path.join(self.dir.name, "missing.sass"))
        self.assertIn("missing.sass: cannot read it", str(e.exception))
        other = os.path.join(self.dir.name, "other.txt")
        with open(other, "w") as f:
            f.write("not a listing\n")
        with self.assertRaises(SystemExit) as e:
            sass.read_functions(other)
        self.assertIn("other.txt: no kernel in it", str(e.exception))

    def test_ambiguous_name_is_an_error(self):
        with self.assertRaises(SystemExit) as e:
            sass.main_loops(self.functions, "kernel")
        self.assertIn("matches 2 kernels", str(e.exception))


if __name__ == "__main__":
    unittest.main()
