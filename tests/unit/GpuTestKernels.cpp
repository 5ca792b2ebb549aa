// The test kernels (see GpuTestKernels.h).
#include "tests/unit/GpuTestKernels.h"

#include <llvm/AsmParser/Parser.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

namespace mdl::test {

namespace {

const char *kKernels = R"IR(
target datalayout = "e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024"
target triple = "spir64-unknown-unknown"

declare spir_func i64 @_Z13get_global_idj(i32)
declare spir_func i64 @_Z12get_local_idj(i32)
declare spir_func i64 @_Z12get_group_idj(i32)
declare spir_func void @_Z7barrierj(i32)

define spir_kernel void @add(ptr addrspace(1) %a, i64 %ao, ptr addrspace(1) %b, i64 %bo,
                             ptr addrspace(1) %c, i64 %co, i64 %n)
    !kernel_arg_addr_space !10 !kernel_arg_access_qual !11 !kernel_arg_type !12
    !kernel_arg_base_type !12 !kernel_arg_type_qual !13 {
entry:
  %i = call spir_func i64 @_Z13get_global_idj(i32 0)
  %in = icmp slt i64 %i, %n
  br i1 %in, label %body, label %done
body:
  %a0 = getelementptr i8, ptr addrspace(1) %a, i64 %ao
  %b0 = getelementptr i8, ptr addrspace(1) %b, i64 %bo
  %c0 = getelementptr i8, ptr addrspace(1) %c, i64 %co
  %pa = getelementptr float, ptr addrspace(1) %a0, i64 %i
  %pb = getelementptr float, ptr addrspace(1) %b0, i64 %i
  %pc = getelementptr float, ptr addrspace(1) %c0, i64 %i
  %x = load float, ptr addrspace(1) %pa
  %y = load float, ptr addrspace(1) %pb
  %s = fadd float %x, %y
  store float %s, ptr addrspace(1) %pc
  br label %done
done:
  ret void
}

define spir_kernel void @scale(ptr addrspace(1) %x, i64 %xo, ptr addrspace(1) %k, i64 %ko,
                               ptr addrspace(1) %y, i64 %yo, i64 %n)
    !kernel_arg_addr_space !10 !kernel_arg_access_qual !11 !kernel_arg_type !12
    !kernel_arg_base_type !12 !kernel_arg_type_qual !13 {
entry:
  %i = call spir_func i64 @_Z13get_global_idj(i32 0)
  %in = icmp slt i64 %i, %n
  br i1 %in, label %body, label %done
body:
  %x0 = getelementptr i8, ptr addrspace(1) %x, i64 %xo
  %k0 = getelementptr i8, ptr addrspace(1) %k, i64 %ko
  %y0 = getelementptr i8, ptr addrspace(1) %y, i64 %yo
  %px = getelementptr float, ptr addrspace(1) %x0, i64 %i
  %py = getelementptr float, ptr addrspace(1) %y0, i64 %i
  %v = load float, ptr addrspace(1) %px
  %f = load float, ptr addrspace(1) %k0
  %r = fmul float %v, %f
  store float %r, ptr addrspace(1) %py
  br label %done
done:
  ret void
}

define spir_kernel void @matmul(ptr addrspace(1) %a, i64 %ao, ptr addrspace(1) %b, i64 %bo,
                                ptr addrspace(1) %c, i64 %co, i64 %m, i64 %n, i64 %k)
    !kernel_arg_addr_space !20 !kernel_arg_access_qual !21 !kernel_arg_type !22
    !kernel_arg_base_type !22 !kernel_arg_type_qual !23 {
entry:
  %col = call spir_func i64 @_Z13get_global_idj(i32 0)
  %row = call spir_func i64 @_Z13get_global_idj(i32 1)
  %inc = icmp slt i64 %col, %n
  %inr = icmp slt i64 %row, %m
  %in = and i1 %inc, %inr
  br i1 %in, label %loop.pre, label %done
loop.pre:
  %a0 = getelementptr i8, ptr addrspace(1) %a, i64 %ao
  %b0 = getelementptr i8, ptr addrspace(1) %b, i64 %bo
  %c0 = getelementptr i8, ptr addrspace(1) %c, i64 %co
  %arow = mul i64 %row, %k
  %empty = icmp eq i64 %k, 0
  br i1 %empty, label %store, label %loop
loop:
  %j = phi i64 [ 0, %loop.pre ], [ %j1, %loop ]
  %acc = phi float [ 0.0, %loop.pre ], [ %acc1, %loop ]
  %ai = add i64 %arow, %j
  %bj = mul i64 %j, %n
  %bi = add i64 %bj, %col
  %pa = getelementptr float, ptr addrspace(1) %a0, i64 %ai
  %pb = getelementptr float, ptr addrspace(1) %b0, i64 %bi
  %va = load float, ptr addrspace(1) %pa
  %vb = load float, ptr addrspace(1) %pb
  %p = fmul float %va, %vb
  %acc1 = fadd float %acc, %p
  %j1 = add i64 %j, 1
  %more = icmp slt i64 %j1, %k
  br i1 %more, label %loop, label %store
store:
  %sum = phi float [ 0.0, %loop.pre ], [ %acc1, %loop ]
  %crow = mul i64 %row, %n
  %ci = add i64 %crow, %col
  %pc = getelementptr float, ptr addrspace(1) %c0, i64 %ci
  store float %sum, ptr addrspace(1) %pc
  br label %done
done:
  ret void
}

@sum64.tile = internal addrspace(3) global [64 x float] undef, align 4

define spir_kernel void @sum64(ptr addrspace(1) %x, i64 %xo, ptr addrspace(1) %y, i64 %yo)
    !kernel_arg_addr_space !30 !kernel_arg_access_qual !31 !kernel_arg_type !32
    !kernel_arg_base_type !32 !kernel_arg_type_qual !33 {
entry:
  %l = call spir_func i64 @_Z12get_local_idj(i32 0)
  %g = call spir_func i64 @_Z12get_group_idj(i32 0)
  %x0 = getelementptr i8, ptr addrspace(1) %x, i64 %xo
  %y0 = getelementptr i8, ptr addrspace(1) %y, i64 %yo
  %base = mul i64 %g, 64
  %xi = add i64 %base, %l
  %px = getelementptr float, ptr addrspace(1) %x0, i64 %xi
  %v = load float, ptr addrspace(1) %px
  %pt = getelementptr [64 x float], ptr addrspace(3) @sum64.tile, i64 0, i64 %l
  store float %v, ptr addrspace(3) %pt
  call spir_func void @_Z7barrierj(i32 1)
  %first = icmp eq i64 %l, 0
  br i1 %first, label %loop, label %done
loop:
  %j = phi i64 [ 0, %entry ], [ %j1, %loop ]
  %acc = phi float [ 0.0, %entry ], [ %acc1, %loop ]
  %pj = getelementptr [64 x float], ptr addrspace(3) @sum64.tile, i64 0, i64 %j
  %vj = load float, ptr addrspace(3) %pj
  %acc1 = fadd float %acc, %vj
  %j1 = add i64 %j, 1
  %more = icmp slt i64 %j1, 64
  br i1 %more, label %loop, label %write
write:
  %py = getelementptr float, ptr addrspace(1) %y0, i64 %g
  store float %acc1, ptr addrspace(1) %py
  br label %done
done:
  ret void
}

define spir_kernel void @report(ptr addrspace(1) %x, i64 %xo, ptr addrspace(1) %r, i64 %ro,
                                i64 %step)
    !kernel_arg_addr_space !40 !kernel_arg_access_qual !41 !kernel_arg_type !42
    !kernel_arg_base_type !42 !kernel_arg_type_qual !43 {
entry:
  %x0 = getelementptr i8, ptr addrspace(1) %x, i64 %xo
  %r0 = getelementptr i8, ptr addrspace(1) %r, i64 %ro
  %v = load i64, ptr addrspace(1) %x0
  %neg = icmp slt i64 %v, 0
  %w = load i32, ptr addrspace(1) %r0
  %free = icmp eq i32 %w, 0
  %both = and i1 %neg, %free
  br i1 %both, label %write, label %done
write:
  %pv = getelementptr i8, ptr addrspace(1) %r0, i64 8
  store i64 %v, ptr addrspace(1) %pv
  %s32 = trunc i64 %step to i32
  %s1 = add i32 %s32, 1
  store i32 %s1, ptr addrspace(1) %r0
  br label %done
done:
  ret void
}

!opencl.ocl.version = !{!0}
!0 = !{i32 1, i32 2}
!10 = !{i32 1, i32 0, i32 1, i32 0, i32 1, i32 0, i32 0}
!11 = !{!"none", !"none", !"none", !"none", !"none", !"none", !"none"}
!12 = !{!"float*", !"long", !"float*", !"long", !"float*", !"long", !"long"}
!13 = !{!"", !"", !"", !"", !"", !"", !""}
!20 = !{i32 1, i32 0, i32 1, i32 0, i32 1, i32 0, i32 0, i32 0, i32 0}
!21 = !{!"none", !"none", !"none", !"none", !"none", !"none", !"none", !"none", !"none"}
!22 = !{!"float*", !"long", !"float*", !"long", !"float*", !"long", !"long", !"long", !"long"}
!23 = !{!"", !"", !"", !"", !"", !"", !"", !"", !""}
!30 = !{i32 1, i32 0, i32 1, i32 0}
!31 = !{!"none", !"none", !"none", !"none"}
!32 = !{!"float*", !"long", !"float*", !"long"}
!33 = !{!"", !"", !"", !""}
!40 = !{i32 1, i32 0, i32 1, i32 0, i32 0}
!41 = !{!"none", !"none", !"none", !"none", !"none"}
!42 = !{!"long*", !"long", !"int*", !"long", !"long"}
!43 = !{!"", !"", !"", !"", !""}
)IR";

} // namespace

std::string gpuTestKernelsBitcode(std::string &error) {
  llvm::LLVMContext context;
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> module = llvm::parseAssemblyString(kKernels, diag, context);
  if (!module) {
    llvm::raw_string_ostream os(error);
    diag.print("test kernels", os);
    return "";
  }
  llvm::raw_string_ostream verify(error);
  if (llvm::verifyModule(*module, &verify))
    return "";
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  llvm::WriteBitcodeToFile(*module, os);
  os.flush();
  return bytes;
}

} // namespace mdl::test
